package etcdlock_test

import (
	"context"
	"path"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
)

// TestReleaseReplyLost: a Release whose delete the server applied but
// whose reply was lost (the try failed) tries again and finds the entry
// gone. If the lock was still held when Release began and a fresh
// keepalive renews its lease, the lost try deleted the entry and the
// Release succeeds (rather than report the lock lost, ErrKeyGone). When
// the lock had been reported lost, or its etcd lease was revoked, the
// Release still reports it gone, failed try or not.
func TestReleaseReplyLost(t *testing.T) {
	c := startMember(t)
	admin := c.admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	t.Run("OwnDelete", func(t *testing.T) {
		l := c.locker(t, "own-delete", nil)
		key := uniqueKey(t)
		ls := mustAcquire(t, l, key)
		etcdlock.SetDeleteRepliesLost(t, 1)
		if err := ls.Release(ctx); err != nil {
			t.Fatalf("Release after its applied delete lost its reply: %v, want nil", err)
		}
		if got := entries(t, admin, key); len(got) != 0 {
			t.Fatalf("entries after Release: %v, want none", got)
		}
		mustRelease(t, mustAcquire(t, l, key)) // the key is free for the next holder
	})

	t.Run("SessionKeptUntilConfirmed", func(t *testing.T) {
		// The failed try retires the session; the lock keeps it in use
		// until the keepalive confirms the deletion, so a wake-up of the
		// session's loop in between does not drop and revoke it (CI saw
		// that race once when the keepalive came after the lock had left).
		l := c.locker(t, "session-kept", nil)
		key := uniqueKey(t)
		ls := mustAcquire(t, l, key)
		etcdlock.SetDeleteRepliesLost(t, 1)
		etcdlock.WakeSessionBeforeConfirm(t, 200*time.Millisecond)
		if err := ls.Release(ctx); err != nil {
			t.Fatalf("Release after its applied delete lost its reply: %v, want nil", err)
		}
	})

	t.Run("DeletedByOther", func(t *testing.T) {
		// No try fails: the Release finds the entry gone and says so.
		l := c.locker(t, "deleted-by-other", nil)
		key := uniqueKey(t)
		ls := mustAcquire(t, l, key)
		if _, err := admin.Delete(ctx, etcdlock.HeldDriver(l, ls).Entry()); err != nil {
			t.Fatal(err)
		}
		wantErr(t, ls.Release(ctx), distlock.ErrLeaseLost)
	})

	t.Run("DeletedByOtherWithFailedTry", func(t *testing.T) {
		// The documented limit: with a failed try, an entry another client
		// deleted while the lock was held and the lease alive cannot be
		// told apart from our own deletion, and counts as released.
		l := c.locker(t, "deleted-by-other-failed-try", nil)
		key := uniqueKey(t)
		ls := mustAcquire(t, l, key)
		if _, err := admin.Delete(ctx, etcdlock.HeldDriver(l, ls).Entry()); err != nil {
			t.Fatal(err)
		}
		etcdlock.SetDeleteRepliesLost(t, 1)
		if err := ls.Release(ctx); err != nil {
			t.Fatalf("Release: %v, want nil (the case the documentation names)", err)
		}
	})

	t.Run("LostBeforeRelease", func(t *testing.T) {
		// An Extend found the entry deleted: the lease is lost, though its
		// validity has not passed. A Release with a failed try reports it.
		l := c.locker(t, "lost-before-release", nil)
		key := uniqueKey(t)
		ls := mustAcquire(t, l, key)
		if _, err := admin.Delete(ctx, etcdlock.HeldDriver(l, ls).Entry()); err != nil {
			t.Fatal(err)
		}
		wantErr(t, ls.Extend(ctx, time.Minute), distlock.ErrLeaseLost)
		etcdlock.SetDeleteRepliesLost(t, 1)
		wantErr(t, ls.Release(ctx), distlock.ErrLeaseLost)
	})

	t.Run("LeaseRevoked", func(t *testing.T) {
		// The lock's etcd lease was revoked (its entry went with it) before
		// the session noticed. A Release with a failed try sends a
		// keepalive, learns that the lease is gone, and reports it.
		l := c.locker(t, "lease-revoked", nil)
		key := uniqueKey(t)
		ls := mustAcquire(t, l, key)
		id, err := strconv.ParseInt(path.Base(etcdlock.HeldDriver(l, ls).Entry()), 16, 64)
		if err != nil {
			t.Fatalf("lease ID of entry %s: %v", etcdlock.HeldDriver(l, ls).Entry(), err)
		}
		if _, err := admin.Revoke(ctx, clientv3.LeaseID(id)); err != nil {
			t.Fatal(err)
		}
		etcdlock.SetDeleteRepliesLost(t, 1)
		wantErr(t, ls.Release(ctx), distlock.ErrLeaseLost)
	})
}
