package memlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/memlock"
)

// TestWatchdogExtendsAndStopsAtCap checks that an auto-extended lease is
// held past several TTLs, and that the watchdog stops at the max hold:
// the lease then ends with lease.ErrMaxHold.
func TestWatchdogExtendsAndStopsAtCap(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	a := hold(t, l, "k", distlock.WithTTL(60*time.Millisecond), distlock.WithAutoExtend(400*time.Millisecond))
	time.Sleep(250 * time.Millisecond) // four TTLs
	if a.Err() != nil {
		t.Fatalf("lost under watchdog: %v", a.Err())
	}
	if _, err := l.NewHandle().TryAcquire(ctx, "k"); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("key free while watchdog runs: %v", err)
	}
	mustBeDone(t, a, time.Second, "at max hold")
	if !errors.Is(a.Err(), lease.ErrMaxHold) {
		t.Fatalf("Err at cap: %v", a.Err())
	}
	_ = a.Release(ctx)
}

// TestExtendPushesExpiry checks that Extend keeps the key past its first
// TTL and moves ValidUntil forward.
func TestExtendPushesExpiry(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	a := hold(t, l, "k", distlock.WithTTL(50*time.Millisecond))
	before := a.ValidUntil()
	if err := a.Extend(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if !a.ValidUntil().After(before) {
		t.Fatalf("ValidUntil %v not after %v", a.ValidUntil(), before)
	}
	time.Sleep(100 * time.Millisecond) // two first TTLs
	if _, err := l.NewHandle().TryAcquire(ctx, "k"); !errors.Is(err, distlock.ErrNotAcquired) || a.Err() != nil {
		t.Fatalf("extended key freed: acquire %v, Err %v", err, a.Err())
	}
	_ = a.Release(ctx)
}
