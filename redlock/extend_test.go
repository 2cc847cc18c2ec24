package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redlock"
)

// testExtendAfterExpiry: Extend moves ValidUntil forward; after the TTL
// has run out, or once the key is gone from the nodes while the local
// deadline has not passed, Extend fails with distlock.ErrLeaseLost (a
// *QuorumError naming every node) and never re-creates the key.
func (c *cluster) testExtendAfterExpiry(t *testing.T) {
	t.Parallel()
	a := c.locker(t, "a", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key, distlock.WithTTL(time.Second))
	before := ls.ValidUntil()
	time.Sleep(50 * time.Millisecond)
	if err := ls.Extend(context.Background(), 2*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if !ls.ValidUntil().After(before.Add(900 * time.Millisecond)) {
		t.Fatalf("ValidUntil %v after extension, was %v", ls.ValidUntil(), before)
	}
	mustRelease(t, ls)

	ls = mustAcquire(t, a, key, distlock.WithTTL(150*time.Millisecond))
	time.Sleep(250 * time.Millisecond)
	err := ls.Extend(context.Background(), time.Second)
	wantErr(t, err, distlock.ErrLeaseLost)
	if h := c.holders(t, key); len(h) > 0 {
		t.Fatalf("extend after expiry re-created the key on nodes %v", h)
	}
	// The driver itself, on a key gone while the local deadline had not
	// passed: also lost, also not re-created.
	ls = mustAcquire(t, a, key, distlock.WithTTL(10*time.Second))
	for _, n := range c.nodes {
		n.Admin().Del(context.Background(), key)
	}
	err = ls.Extend(context.Background(), time.Second)
	wantErr(t, err, distlock.ErrLeaseLost)
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || len(qe.Nodes) != 5 {
		t.Fatalf("error %v, want a *QuorumError naming 5 nodes", err)
	}
	wantErr(t, ls.Err(), distlock.ErrLeaseLost)
	if h := c.holders(t, key); len(h) > 0 {
		t.Fatalf("extend re-created the key on nodes %v", h)
	}
}

// testWatchdog: a lease with auto-extension outlives its 1 s TTL several
// times over, and another Locker still cannot take the key.
func (c *cluster) testWatchdog(t *testing.T) {
	t.Parallel()
	a, b := c.locker(t, "a", nil), c.locker(t, "b", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key, distlock.WithTTL(time.Second), distlock.WithAutoExtend(0))
	time.Sleep(3 * time.Second)
	if err := ls.Err(); err != nil {
		t.Fatalf("lease lost under the watchdog: %v", err)
	}
	_, err := b.TryAcquire(context.Background(), key)
	wantErr(t, err, distlock.ErrNotAcquired)
	mustRelease(t, ls)
}
