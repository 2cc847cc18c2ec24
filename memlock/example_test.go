package memlock_test

import (
	"context"
	"fmt"

	"github.com/distlock/distlock/memlock"
)

// Two handles on one space contend like two clients.
func ExampleLocker_NewHandle() {
	ctx := context.Background()
	a := memlock.New(nil)
	b := a.NewHandle()
	lease, _ := a.TryAcquire(ctx, "job")
	_, err := b.TryAcquire(ctx, "job")
	fmt.Println(err)
	_ = lease.Release(ctx)
	// Output: distlock: not acquired: key "job" is held
}
