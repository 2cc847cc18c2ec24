package distlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/fencing"
	"github.com/distlock/distlock/memlock"
)

// Do runs a section under a lease: the watchdog keeps it, fn's context is
// cancelled if it is lost, and the key is released when fn returns.
func ExampleDo() {
	ctx := context.Background()
	locker := memlock.New(nil)
	defer locker.Close()
	var ledger fencing.Register[int]

	err := distlock.Do(ctx, locker, "ledger", func(ctx context.Context, lease distlock.Lease) error {
		if err := ctx.Err(); err != nil {
			return err // lost (context.Cause says why) or the caller gave up
		}
		return ledger.Write(lease.Fence(), 42) // the resource rejects a stale holder
	})
	fmt.Println("done:", err)

	// A lease lost mid-section cancels fn's context with the reason.
	err = distlock.Do(ctx, locker, "ledger", func(ctx context.Context, lease distlock.Lease) error {
		locker.Revoke("ledger") // an operator takes the key away
		<-ctx.Done()
		fmt.Println("cause is lost lease:", errors.Is(context.Cause(ctx), distlock.ErrLeaseLost))
		return nil
	})
	fmt.Println("Do reports the loss:", errors.Is(err, distlock.ErrLeaseLost))
	// Output:
	// done: <nil>
	// cause is lost lease: true
	// Do reports the loss: true
}

// TryDo runs fn only if the key is free now: a job that any one of several
// instances may run skips it when another instance already does.
func ExampleTryDo() {
	ctx := context.Background()
	locker := memlock.New(nil)
	defer locker.Close()
	other, _ := locker.TryAcquire(ctx, "nightly-report") // another instance runs it
	defer other.Release(ctx)

	err := distlock.TryDo(ctx, locker, "nightly-report", func(context.Context, distlock.Lease) error {
		fmt.Println("running the report")
		return nil
	})
	fmt.Println("skipped:", errors.Is(err, distlock.ErrNotAcquired))
	// Output: skipped: true
}

// Reentrant lets code that already holds a key call code that takes it
// again, for one explicit owner: the inner acquisition is counted, not
// sent to the backend, and only the outermost release frees the key.
func ExampleReentrant() {
	locker := memlock.New(nil)
	defer locker.Close()
	r := distlock.Reentrant(locker)
	ctx := distlock.WithOwner(context.Background(), "request-7")

	outer, _ := r.Acquire(ctx, "account/42")
	inner, _ := r.Acquire(ctx, "account/42") // no wait: the same owner
	fmt.Println("same lease:", inner.Fence() == outer.Fence())
	_ = inner.Release(ctx)

	_, err := r.TryAcquire(distlock.WithOwner(ctx, "request-8"), "account/42")
	fmt.Println("other owner waits:", errors.Is(err, distlock.ErrNotAcquired))
	_ = outer.Release(ctx)

	ls, err := r.TryAcquire(distlock.WithOwner(ctx, "request-8"), "account/42")
	fmt.Println("free after the outermost release:", err == nil)
	_ = ls.Release(ctx)
	// Output:
	// same lease: true
	// other owner waits: true
	// free after the outermost release: true
}
