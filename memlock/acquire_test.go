package memlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/memlock"
)

// TestTryAcquireContention checks a lease's fields, that a second client
// on the space is refused while the key is held, and that the next holder
// gets a new token and a higher fence.
func TestTryAcquireContention(t *testing.T) {
	ctx := context.Background()
	a := memlock.New(nil)
	b := a.NewHandle()
	la := hold(t, a, "k", distlock.WithTTL(time.Second))
	if len(la.Token()) < 32 || la.Fence() == 0 || !la.ValidUntil().After(time.Now()) {
		t.Fatalf("lease fields: token %q fence %d valid %v", la.Token(), la.Fence(), la.ValidUntil())
	}
	if _, err := b.TryAcquire(ctx, "k"); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("second holder: %v", err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lb := hold(t, b, "k")
	if lb.Fence() <= la.Fence() || lb.Token() == la.Token() {
		t.Fatalf("fence %d after %d, tokens %s %s", lb.Fence(), la.Fence(), lb.Token(), la.Token())
	}
	_ = lb.Release(ctx)
}

// TestTryAcquireEndedContext checks that TryAcquire with an ended context
// returns an error matching ErrNotAcquired and the context's error.
func TestTryAcquireEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := memlock.New(nil).TryAcquire(ctx, "k")
	if !errors.Is(err, distlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

// TestInvalidArguments checks that an empty key and out-of-range options,
// to either call and to Extend, return errors matching ErrInvalidArgument.
func TestInvalidArguments(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	if _, err := l.TryAcquire(ctx, ""); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("empty key: %v", err)
	}
	if _, err := l.Acquire(ctx, "k", distlock.WithTTL(0)); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("ttl 0: %v", err)
	}
	if _, err := l.Acquire(ctx, "k", distlock.WithAutoExtend(-time.Second)); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("negative max hold: %v", err)
	}
	a := hold(t, l, "k")
	if err := a.Extend(ctx, -1); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("extend ttl<0: %v", err)
	}
	_ = a.Release(ctx)
}

// TestNewDefaults checks that New's options become the per-call defaults
// and that a call's option overrides them.
func TestNewDefaults(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(&distlock.Options{TTL: 2 * time.Second})
	a := hold(t, l, "k")
	if left := time.Until(a.ValidUntil()); left > 2*time.Second || left < time.Second {
		t.Fatalf("default TTL not applied: %v left", left)
	}
	_ = a.Release(ctx)
	b := hold(t, l, "k", distlock.WithTTL(time.Hour))
	if left := time.Until(b.ValidUntil()); left < time.Minute {
		t.Fatalf("call's TTL not applied: %v left", left)
	}
	_ = b.Release(ctx)
}
