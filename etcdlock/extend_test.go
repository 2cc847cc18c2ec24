package etcdlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
)

// testIndependentExpiry: two locks share a lease; the one that is not
// extended expires on its own (Done, entry deleted), the other stays.
func (c *cluster) testIndependentExpiry(t *testing.T) {
	t.Parallel()
	l := c.locker(t, "indep", nil)
	admin := c.admin(t)
	ttl := 2 * time.Second
	kx, ks := uniqueKey(t), uniqueKey(t)
	kept := mustAcquire(t, l, kx, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Minute))
	short := mustAcquire(t, l, ks, distlock.WithTTL(ttl))
	select {
	case <-short.Done():
	case <-time.After(3 * ttl):
		t.Fatal("the lock without extension never expired")
	}
	wantErr(t, short.Err(), distlock.ErrLeaseLost)
	eventually(t, 5*time.Second, "expired lock's entry deleted", func() bool { return len(entries(t, admin, ks)) == 0 })
	if err := kept.Err(); err != nil {
		t.Fatalf("the extended lock on the same lease was lost: %v", err)
	}
	if len(entries(t, admin, kx)) != 1 {
		t.Fatal("the extended lock's entry is gone")
	}
	wantErr(t, short.Release(context.Background()), distlock.ErrLeaseLost)
	mustRelease(t, kept)
}

// testExtendAfterExpiry: a lease that expired reports ErrLeaseLost
// (Done, Err, and Extend once another client holds the key), and its
// Locker is refused while the other holds it.
func (c *cluster) testExtendAfterExpiry(t *testing.T) {
	t.Parallel()
	a, b := c.locker(t, "a", nil), c.locker(t, "b", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key, distlock.WithTTL(2*time.Second))
	<-ls.Done()
	wantErr(t, ls.Err(), distlock.ErrLeaseLost)
	ls2 := mustAcquire(t, b, key)
	wantErr(t, ls.Extend(context.Background(), time.Minute), distlock.ErrLeaseLost)
	if _, err := a.TryAcquire(context.Background(), key); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire while b holds: %v", err)
	}
	mustRelease(t, ls2)
}

// testWatchdog: under auto-extension a lock of a 2 s TTL stays held (and
// exclusive) for three TTLs, with at least a third of the TTL left.
func (c *cluster) testWatchdog(t *testing.T) {
	t.Parallel()
	a, b := c.locker(t, "a", nil), c.locker(t, "b", nil)
	key := uniqueKey(t)
	ttl := 2 * time.Second
	ls := mustAcquire(t, a, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Minute))
	deadline := time.Now().Add(3 * ttl)
	for time.Now().Before(deadline) {
		if _, err := b.TryAcquire(context.Background(), key); !errors.Is(err, distlock.ErrNotAcquired) {
			t.Fatalf("TryAcquire while held under auto-extension: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := ls.Err(); err != nil {
		t.Fatalf("lost under auto-extension: %v", err)
	}
	if left := time.Until(ls.ValidUntil()); left < ttl/3 {
		t.Fatalf("validity %v left under auto-extension", left)
	}
	mustRelease(t, ls)
}

// testRevokedLeaseLost: an operator revokes the etcd lease: the lock is
// reported lost at its next renewal, and Release says so.
func (c *cluster) testRevokedLeaseLost(t *testing.T) {
	t.Parallel()
	a := c.locker(t, "revoke", nil)
	admin := c.admin(t)
	key := uniqueKey(t)
	ttl := 2 * time.Second
	ls := mustAcquire(t, a, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Minute))
	if _, err := admin.Revoke(context.Background(), clientv3.LeaseID(leaseOf(t, admin, key))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ls.Done():
	case <-time.After(ttl):
		t.Fatal("not told of the revocation within a TTL")
	}
	wantErr(t, ls.Err(), distlock.ErrLeaseLost)
	wantErr(t, ls.Release(context.Background()), distlock.ErrLeaseLost)
}
