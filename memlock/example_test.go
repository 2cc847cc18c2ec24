package memlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/memlock"
)

// A private space with a default TTL for every call.
func ExampleNew() {
	ctx := context.Background()
	locker := memlock.New(&distlock.Options{TTL: 10 * time.Second})
	defer locker.Close()
	lease, err := locker.Acquire(ctx, "job")
	if err != nil {
		panic(err)
	}
	fmt.Println(lease.Key(), lease.Fence())
	_ = lease.Release(ctx)
	// Output: job 1
}

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

// Revoke takes a key away from its holder, whose lease learns it at once.
func ExampleLocker_Revoke() {
	ctx := context.Background()
	locker := memlock.New(nil)
	lease, _ := locker.TryAcquire(ctx, "job")
	fmt.Println(locker.Revoke("job"))
	<-lease.Done()
	fmt.Println(errors.Is(lease.Err(), distlock.ErrLeaseLost))
	// Output:
	// true
	// true
}

// Lockers opened on the same named space contend on the same keys.
func Example_url() {
	ctx := context.Background()
	a, _ := distlock.Open(ctx, "mem://example-url?ttl=5s")
	b, _ := distlock.Open(ctx, "mem://example-url")
	defer a.Close()
	defer b.Close()
	lease, _ := a.TryAcquire(ctx, "job")
	_, err := b.TryAcquire(ctx, "job")
	fmt.Println(errors.Is(err, distlock.ErrNotAcquired))
	_ = lease.Release(ctx)
	// Output: true
}
