package memlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/memlock"
)

// TestReleaseEndsLease checks that Release closes Done, makes Err match
// ErrReleased, frees the key, and returns the same result when repeated.
func TestReleaseEndsLease(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	a := hold(t, l, "k")
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mustBeDone(t, a, 0, "after release")
	if !errors.Is(a.Err(), distlock.ErrReleased) {
		t.Fatalf("Err after release: %v", a.Err())
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("second release: %v", err)
	}
	b, err := l.NewHandle().TryAcquire(ctx, "k")
	if err != nil {
		t.Fatalf("key not freed: %v", err)
	}
	_ = b.Release(ctx)
}

// TestReleaseStopsWatchdog checks that releasing an auto-extended lease
// stops its watchdog (goleak in TestMain catches one that lives on) and
// leaves the next holder of the key alone.
func TestReleaseStopsWatchdog(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	a := hold(t, l, "k", distlock.WithTTL(30*time.Millisecond), distlock.WithAutoExtend(0))
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b := hold(t, l, "k", distlock.WithTTL(time.Hour))
	time.Sleep(100 * time.Millisecond)
	if b.Err() != nil {
		t.Fatalf("new holder disturbed: %v", b.Err())
	}
	_ = b.Release(ctx)
}
