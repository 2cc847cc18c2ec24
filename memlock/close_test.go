package memlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/memlock"
)

// TestCloseWakesWaiters checks that Close makes this handle's blocked
// Acquire return ErrClosed, that a waiter of another handle on the space
// waits on, and that calls after Close return ErrClosed.
func TestCloseWakesWaiters(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	a := hold(t, l, "k")
	closing, other := l.NewHandle(), l.NewHandle()
	errc := make(chan error, 1)
	go func() { _, err := closing.Acquire(ctx, "k"); errc <- err }()
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	otherc := make(chan error, 1)
	go func() { _, err := other.Acquire(octx, "k"); otherc <- err }()
	time.Sleep(20 * time.Millisecond)
	if err := closing.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, distlock.ErrClosed) {
		t.Fatalf("blocked acquire on close: %v", err)
	}
	if _, err := closing.TryAcquire(ctx, "k"); !errors.Is(err, distlock.ErrClosed) {
		t.Fatalf("TryAcquire after close: %v", err)
	}
	if _, err := closing.Acquire(ctx, "k"); !errors.Is(err, distlock.ErrClosed) {
		t.Fatalf("Acquire after close: %v", err)
	}
	select {
	case err := <-otherc:
		t.Fatalf("another handle's waiter returned on Close: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	if err := <-otherc; !errors.Is(err, context.Canceled) {
		t.Fatalf("other waiter: %v", err)
	}
	if err := closing.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_ = a.Release(ctx)
}

// TestCloseStopsWatchdogs checks that Close on a Locker whose auto-extended
// lease is still held stops and joins the lease's watchdog (no goroutine
// is left running), and that the lease is not released but runs out at
// its validity.
func TestCloseStopsWatchdogs(t *testing.T) {
	before := goleak.IgnoreCurrent() // judge only goroutines this test starts
	l := memlock.New(nil)
	ls, err := l.Acquire(context.Background(), "k", distlock.WithTTL(60*time.Millisecond), distlock.WithAutoExtend(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, before)
	mustBeDone(t, ls, time.Second, "after Close")
	if !errors.Is(ls.Err(), distlock.ErrLeaseLost) {
		t.Fatalf("Err = %v", ls.Err())
	}
}

// TestCloseKeepsLeases checks that a lease held when its Locker closes
// can still be extended and released.
func TestCloseKeepsLeases(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	a := hold(t, l, "k")
	_ = l.Close()
	if err := a.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("extend after Close: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("release after Close: %v", err)
	}
}
