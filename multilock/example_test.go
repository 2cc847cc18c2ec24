package multilock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/memlock"
	"github.com/distlock/distlock/multilock"
)

// Acquire takes a set of keys as one lease, in canonical order whatever
// order they are passed in; each key's fence is available.
func ExampleAcquire() {
	locker := memlock.New(nil) // in a service: one of the networked backends
	defer locker.Close()
	ctx := context.Background()

	lease, err := multilock.Acquire(ctx, locker, []string{"account/42", "account/7"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lease.Release(ctx)
	fmt.Println("holding", lease.Keys())
	fences := lease.Fences()
	fmt.Println("fences:", fences["account/42"], fences["account/7"])
	// Output:
	// holding [account/42 account/7]
	// fences: 1 2
}

// TryAcquire takes all keys or none: one key held elsewhere fails the
// call and the keys taken before it are released.
func ExampleTryAcquire() {
	locker := memlock.New(nil)
	defer locker.Close()
	other := locker.NewHandle() // a second client, as another process would have
	defer other.Close()
	ctx := context.Background()

	held, _ := other.Acquire(ctx, "b")
	_, err := multilock.TryAcquire(ctx, locker, []string{"c", "b", "a"})
	fmt.Println("not acquired:", errors.Is(err, distlock.ErrNotAcquired))

	a, err := other.TryAcquire(ctx, "a") // "a" was released again
	fmt.Println("a free:", err == nil)
	a.Release(ctx)
	held.Release(ctx)
	// Output:
	// not acquired: true
	// a free: true
}

// Losing any key ends the whole lease: Done fires, Err names the key, and
// the other keys are released.
func ExampleLease_Done() {
	locker := memlock.New(nil)
	defer locker.Close()
	ctx := context.Background()

	lease, err := multilock.Acquire(ctx, locker, []string{"x", "y"})
	if err != nil {
		fmt.Println(err)
		return
	}
	locker.Revoke("y") // as an operator would
	<-lease.Done()
	fmt.Println("lost:", errors.Is(lease.Err(), distlock.ErrLeaseLost))
	fmt.Println("release:", errors.Is(lease.Release(ctx), distlock.ErrLeaseLost))
	// Output:
	// lost: true
	// release: true
}
