package distlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/fencing"
	_ "github.com/distlock/distlock/memlock" // registers mem://
)

// Open a Locker by URL, take a lease, release it.
func ExampleOpen() {
	ctx := context.Background()
	locker, err := distlock.Open(ctx, "mem://example-open?ttl=10s")
	if err != nil {
		panic(err)
	}
	defer locker.Close()

	lease, err := locker.Acquire(ctx, "reports/daily")
	if err != nil {
		panic(err)
	}
	fmt.Println("held", lease.Key(), "fence > 0:", lease.Fence() > 0)
	fmt.Println("released:", lease.Release(ctx) == nil, errors.Is(lease.Err(), distlock.ErrReleased))
	// Output:
	// held reports/daily fence > 0: true
	// released: true true
}

// TryAcquire tells contention apart from other failures.
func ExampleLocker_TryAcquire() {
	ctx := context.Background()
	locker, _ := distlock.Open(ctx, "mem://example-try")
	defer locker.Close()

	first, _ := locker.TryAcquire(ctx, "k")
	_, err := locker.TryAcquire(ctx, "k")
	fmt.Println(errors.Is(err, distlock.ErrNotAcquired))

	_, err = locker.TryAcquire(ctx, "k", distlock.WithTTL(0))
	fmt.Println(errors.Is(err, distlock.ErrInvalidArgument))
	_ = first.Release(ctx)
	// Output:
	// true
	// true
}

// A blocked Acquire gives up when its context ends; the error says why.
func ExampleLocker_Acquire_timeout() {
	ctx := context.Background()
	locker, _ := distlock.Open(ctx, "mem://example-timeout")
	defer locker.Close()
	held, _ := locker.TryAcquire(ctx, "k")
	defer held.Release(ctx)

	wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err := locker.Acquire(wctx, "k")
	fmt.Println(errors.Is(err, distlock.ErrNotAcquired), errors.Is(err, context.DeadlineExceeded))
	// Output: true true
}

// The watchdog keeps a lease past its TTL; a lost lease closes Done.
func ExampleWithAutoExtend() {
	ctx := context.Background()
	locker, _ := distlock.Open(ctx, "mem://example-watchdog")
	defer locker.Close()

	lease, _ := locker.Acquire(ctx, "k", distlock.WithTTL(30*time.Millisecond), distlock.WithAutoExtend(time.Minute))
	time.Sleep(100 * time.Millisecond) // three TTLs of work
	select {
	case <-lease.Done():
		fmt.Println("lost:", lease.Err())
	default:
		fmt.Println("still held")
	}
	_ = lease.Release(ctx)
	// Output: still held
}

// A resource that checks fences rejects a holder that outlived its lease.
func ExampleLease_Fence() {
	ctx := context.Background()
	locker, _ := distlock.Open(ctx, "mem://example-fence")
	defer locker.Close()
	var account fencing.Register[int]

	old, _ := locker.Acquire(ctx, "account", distlock.WithTTL(20*time.Millisecond))
	<-old.Done() // the old holder stalls past its TTL (a GC pause, say)

	cur, _ := locker.Acquire(ctx, "account")
	fmt.Println(account.Write(cur.Fence(), 100))
	err := account.Write(old.Fence(), 50) // the stale holder wakes up and writes
	fmt.Println(errors.Is(err, fencing.ErrStaleFence))
	_ = cur.Release(ctx)
	// Output:
	// <nil>
	// true
}
