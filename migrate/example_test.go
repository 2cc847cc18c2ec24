package migrate_test

import (
	"context"
	"fmt"
	"log"
	"net/url"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/fencing"
	_ "github.com/distlock/distlock/memlock"
	"github.com/distlock/distlock/migrate"
)

// A fleet moving from one backend to another changes only the phase in
// its lock URL, one step at a time. Here both sides are in-process
// spaces; in production from would be, say, redis://... and to
// etcd://....
func Example() {
	ctx := context.Background()
	q := url.Values{"from": {"mem://old"}, "to": {"mem://new"}, "phase": {"both"}}
	locker, err := distlock.Open(ctx, "migrate://?"+q.Encode())
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()

	lease, err := locker.Acquire(ctx, "invoice-42")
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(ctx)

	var invoices fencing.PairRegister[string]
	pair, _ := migrate.Fences(lease)
	fmt.Println(invoices.Write(pair, "paid"))
	// Output: <nil>
}

// New composes two Lockers in a phase; the composite owns them.
func ExampleNew() {
	locker, err := migrate.New(memLocker("old"), memLocker("new"), migrate.Options{Phase: migrate.PhaseShadow})
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	fmt.Println(locker.Phase(), migrate.Adjacent(migrate.PhaseShadow, migrate.PhaseBoth), migrate.Adjacent(migrate.PhaseShadow, migrate.PhaseTo))
	// Output: shadow true false
}

func memLocker(space string) distlock.Locker {
	l, err := distlock.Open(context.Background(), "mem://"+space)
	if err != nil {
		log.Fatal(err)
	}
	return l
}
