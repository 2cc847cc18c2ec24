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

// TestExpiryNotifiesHolder checks that a lease whose TTL runs out without
// an extension closes Done with an Err matching ErrLeaseLost and an expiry
// cause: the lease's own validity timer (lease.ErrExpired, a drift margin
// before the key expires) or, under load, the key's expiry timer.
func TestExpiryNotifiesHolder(t *testing.T) {
	l := memlock.New(nil)
	a := hold(t, l, "k", distlock.WithTTL(50*time.Millisecond))
	mustBeDone(t, a, time.Second, "after TTL")
	if !errors.Is(a.Err(), distlock.ErrLeaseLost) ||
		!(errors.Is(a.Err(), lease.ErrExpired) || errors.Is(a.Err(), memlock.ErrKeyExpired)) {
		t.Fatalf("Err: %v", a.Err())
	}
}

// TestStaleCallsAreRefused checks that once a lease has expired and the key
// passed to the next holder, the old lease's Extend and Release return
// errors matching ErrLeaseLost and leave the next holder's key alone.
func TestStaleCallsAreRefused(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	a := hold(t, l, "k", distlock.WithTTL(50*time.Millisecond))
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	b, err := l.Acquire(wctx, "k", distlock.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Extend(ctx, time.Second); !errors.Is(err, distlock.ErrLeaseLost) {
		t.Fatalf("extend after expiry: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, distlock.ErrLeaseLost) {
		t.Fatalf("stale release: %v", err)
	}
	if _, err := l.TryAcquire(ctx, "k"); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("stale release freed the next holder's key: %v", err)
	}
	_ = b.Release(ctx)
}

// TestRevokeNotifiesHolder checks that Revoke closes the holder's Done
// before it returns, with an Err matching ErrLeaseLost, frees the key, and
// reports false for a key nobody holds.
func TestRevokeNotifiesHolder(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	a := hold(t, l, "k")
	if !l.Revoke("k") {
		t.Fatal("revoke found nothing")
	}
	mustBeDone(t, a, 0, "revoked holder")
	if !errors.Is(a.Err(), distlock.ErrLeaseLost) {
		t.Fatalf("Err: %v", a.Err())
	}
	if l.Revoke("k") {
		t.Fatal("revoke of a free key reported true")
	}
	b, err := l.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatalf("revoked key not freed: %v", err)
	}
	_ = b.Release(ctx)
}
