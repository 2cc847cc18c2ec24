package etcdlock_test

import (
	"context"
	"path"
	"slices"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
)

// TestDeleteOnce forces the interleavings behind deleteOnce (driver.go)
// and the token check on adoption (acquire.go, TryAcquire): a lock A whose
// entry was deleted by one path (the reaper, or Release) is deleted again
// by a late path (Release, the background retry, or a reaper goroutine)
// after a newer acquisition B of the same key took the same session, hence
// the same etcd key. The late deletion must not free B's reservation, and
// no acquisition may adopt B's entry as its own: B stays the only holder.
// The deletion paths are run in order through export_test.go, so the test
// does not depend on timers.
func TestDeleteOnce(t *testing.T) {
	c := startMember(t)
	f := &deleteOnce{c: c, admin: c.admin(t)}
	t.Run("ReaperThenLateRelease", f.reaperThenLateRelease)
	t.Run("ReleaseThenLateReaper", f.releaseThenLateReaper)
	t.Run("AdoptsOnlyItsOwnEntry", f.adoptsOnlyItsOwnEntry)
}

// deleteOnce is the fixture of TestDeleteOnce.
type deleteOnce struct {
	c     *cluster
	admin *clientv3.Client
}

// reuse acquires key again on l after old's entry was deleted, and checks
// that the new lock took old's session (same etcd key): the precondition
// of the interleaving.
func (f *deleteOnce) reuse(t *testing.T, l *etcdlock.Locker, key string, old *etcdlock.LockDriver) (distlock.Lease, *etcdlock.LockDriver) {
	t.Helper()
	if got := entries(t, f.admin, key); len(got) != 0 {
		t.Fatalf("entries of the deleted lock: %v, want none", got)
	}
	b := mustAcquire(t, l, key)
	bx := etcdlock.HeldDriver(l, b)
	if bx.Entry() != old.Entry() {
		t.Fatalf("precondition: the new lock's entry %s is not the old one's %s (another session)", bx.Entry(), old.Entry())
	}
	return b, bx
}

// reaperThenLateRelease: lock A runs out and the reaper deletes its entry;
// B takes the key on the same session; then A's late Release (ErrLeaseLost)
// and a late background deletion leave B the sole holder.
func (f *deleteOnce) reaperThenLateRelease(t *testing.T) {
	l := f.c.locker(t, "reaper-release", nil)
	key := uniqueKey(t)
	a := mustAcquire(t, l, key)
	ax := etcdlock.HeldDriver(l, a)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ax.RunOut(ctx); err != nil {
		t.Fatalf("the reaper did not delete the expired lock's entry: %v", err)
	}
	wantErr(t, a.Err(), distlock.ErrLeaseLost)
	b, bx := f.reuse(t, l, key, ax)
	// A's holder releases late: its entry is gone (the reaper).
	wantErr(t, a.Release(ctx), distlock.ErrLeaseLost)
	// And the background retry of a Release runs once more.
	lateDelete(t, ctx, ax, "reaped")
	soleHolder(t, l, f.admin, key, b, bx)
}

// releaseThenLateReaper: A is released, B takes the key on the same
// session, then a reaper goroutine that saw A run out just before the
// Release deletes late: B stays the sole holder.
func (f *deleteOnce) releaseThenLateReaper(t *testing.T) {
	l := f.c.locker(t, "release-reaper", nil)
	key := uniqueKey(t)
	a := mustAcquire(t, l, key)
	ax := etcdlock.HeldDriver(l, a)
	mustRelease(t, a)
	b, bx := f.reuse(t, l, key, ax)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lateDelete(t, ctx, ax, "released")
	soleHolder(t, l, f.admin, key, b, bx)
}

// lateDelete runs a late deletion of the lock ax (what says how its entry
// went) and checks that it finds no entry of its own to delete.
func lateDelete(t *testing.T, ctx context.Context, ax *etcdlock.LockDriver, what string) {
	t.Helper()
	if ours, err := ax.DeleteLate(ctx); ours || err != nil {
		t.Fatalf("late deletion of the %s lock: ours %v, err %v; want false, nil", what, ours, err)
	}
}

// adoptsOnlyItsOwnEntry: should the reservation be freed anyway, an
// acquisition that finds the session's entry for the key does not take it
// for an earlier try of its own unless it carries its token.
func (f *deleteOnce) adoptsOnlyItsOwnEntry(t *testing.T) {
	l := f.c.locker(t, "adopt", nil)
	key := uniqueKey(t)
	b := mustAcquire(t, l, key)
	bx := etcdlock.HeldDriver(l, b)
	bx.Unreserve()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if other, err := l.TryAcquire(ctx, key); err == nil {
		t.Fatalf("TryAcquire adopted the holder's entry: two holders, fences %d and %d", b.Fence(), other.Fence())
	}
	bx.Unreserve() // TryAcquire's refusal left the key reserved again
	actx, acancel := context.WithTimeout(ctx, time.Second)
	defer acancel()
	other, err := l.Acquire(actx, key)
	if err == nil {
		t.Fatalf("Acquire adopted the holder's entry: two holders, fences %d and %d", b.Fence(), other.Fence())
	}
	wantErr(t, err, distlock.ErrNotAcquired)
	stillHeld(t, f.admin, key, b, bx)
}

// soleHolder checks that b, held by l through bx, is the only holder of
// key: its session still reserves the key, and another acquisition of the
// key through l is refused (TryAcquire: not acquired, the key is held) or
// waits (Acquire) instead of adopting b's entry.
func soleHolder(t *testing.T, l *etcdlock.Locker, admin *clientv3.Client, key string, b distlock.Lease, bx *etcdlock.LockDriver) {
	t.Helper()
	if !bx.Reserved() {
		t.Errorf("a late deletion of the old lock freed the new lock's reservation of %s on its session", key)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	other, err := l.TryAcquire(ctx, key)
	if err == nil {
		t.Fatalf("TryAcquire succeeded while %s is held: two holders, fences %d and %d", key, b.Fence(), other.Fence())
	}
	wantErr(t, err, distlock.ErrNotAcquired)
	notErr(t, err, distlock.ErrUnavailable)
	actx, acancel := context.WithTimeout(ctx, time.Second)
	defer acancel()
	other, err = l.Acquire(actx, key)
	if err == nil {
		t.Fatalf("Acquire succeeded while %s is held: two holders, fences %d and %d", key, b.Fence(), other.Fence())
	}
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
	stillHeld(t, admin, key, b, bx)
}

// stillHeld checks that b's entry is the only one of key, that b can be
// extended and released, and that its release deletes the entry.
func stillHeld(t *testing.T, admin *clientv3.Client, key string, b distlock.Lease, bx *etcdlock.LockDriver) {
	t.Helper()
	if got := entries(t, admin, key); !slices.Equal(got, []string{bx.Entry()}) {
		t.Fatalf("entries %v, want only the holder's %s", got, bx.Entry())
	}
	if err := b.Err(); err != nil {
		t.Fatalf("the holder's lease ended: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Extend(ctx, distlock.DefaultTTL); err != nil {
		t.Fatalf("the holder's Extend: %v", err)
	}
	mustRelease(t, b)
	if got := entries(t, admin, key); len(got) != 0 {
		t.Fatalf("entries after the holder's release: %v, want none", got)
	}
}

// TestReleaseReplyLost: a Release whose delete the server applied but
// whose reply was lost (the try failed) tries again and finds the entry
// gone. If the lock was still held when Release began and a fresh
// keepalive renews its lease, the lost try deleted the entry and the
// Release succeeds (rather than report the lock lost, ErrKeyGone). When
// the lock had been reported lost, or its etcd lease was revoked, the
// Release still reports it gone, failed try or not.
func TestReleaseReplyLost(t *testing.T) {
	c := startMember(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := &replyLost{c: c, admin: c.admin(t), ctx: ctx}
	t.Run("OwnDelete", f.ownDelete)
	t.Run("SessionKeptUntilConfirmed", f.sessionKeptUntilConfirmed)
	t.Run("DeletedByOther", f.deletedByOther)
	t.Run("DeletedByOtherWithFailedTry", f.deletedByOtherWithFailedTry)
	t.Run("LostBeforeRelease", f.lostBeforeRelease)
	t.Run("LeaseRevoked", f.leaseRevoked)
}

// replyLost is the fixture of TestReleaseReplyLost.
type replyLost struct {
	c     *cluster
	admin *clientv3.Client
	ctx   context.Context
}

// hold returns a new Locker (link name) holding a new key.
func (f *replyLost) hold(t *testing.T, name string) (*etcdlock.Locker, string, distlock.Lease) {
	t.Helper()
	l := f.c.locker(t, name, nil)
	key := uniqueKey(t)
	return l, key, mustAcquire(t, l, key)
}

// deleteEntry deletes the entry of ls, held through l, as another client
// would.
func (f *replyLost) deleteEntry(t *testing.T, l *etcdlock.Locker, ls distlock.Lease) {
	t.Helper()
	if _, err := f.admin.Delete(f.ctx, etcdlock.HeldDriver(l, ls).Entry()); err != nil {
		t.Fatal(err)
	}
}

// ownDelete: the Release whose first delete lost its reply succeeds, the
// entry is gone, and the key is free for the next holder.
func (f *replyLost) ownDelete(t *testing.T) {
	l, key, ls := f.hold(t, "own-delete")
	etcdlock.SetDeleteRepliesLost(t, 1)
	if err := ls.Release(f.ctx); err != nil {
		t.Fatalf("Release after its applied delete lost its reply: %v, want nil", err)
	}
	if got := entries(t, f.admin, key); len(got) != 0 {
		t.Fatalf("entries after Release: %v, want none", got)
	}
	mustRelease(t, mustAcquire(t, l, key))
}

// sessionKeptUntilConfirmed: the failed try retires the session; the lock
// keeps it in use until the keepalive confirms the deletion, so a wake-up
// of the session's loop in between does not drop and revoke it, and the
// Release succeeds.
func (f *replyLost) sessionKeptUntilConfirmed(t *testing.T) {
	_, _, ls := f.hold(t, "session-kept")
	etcdlock.SetDeleteRepliesLost(t, 1)
	etcdlock.WakeSessionBeforeConfirm(t, 200*time.Millisecond)
	if err := ls.Release(f.ctx); err != nil {
		t.Fatalf("Release after its applied delete lost its reply: %v, want nil", err)
	}
}

// deletedByOther: with no failed try, a Release that finds the entry
// deleted by another client reports the lock lost.
func (f *replyLost) deletedByOther(t *testing.T) {
	l, _, ls := f.hold(t, "deleted-by-other")
	f.deleteEntry(t, l, ls)
	wantErr(t, ls.Release(f.ctx), distlock.ErrLeaseLost)
}

// deletedByOtherWithFailedTry: the documented limit of Release: with a
// failed try, an entry another client deleted while the lock was held and
// the lease alive cannot be told apart from our own deletion, and counts
// as released.
func (f *replyLost) deletedByOtherWithFailedTry(t *testing.T) {
	l, _, ls := f.hold(t, "deleted-by-other-failed-try")
	f.deleteEntry(t, l, ls)
	etcdlock.SetDeleteRepliesLost(t, 1)
	if err := ls.Release(f.ctx); err != nil {
		t.Fatalf("Release: %v, want nil (the case the documentation names)", err)
	}
}

// lostBeforeRelease: an Extend found the entry deleted, so the lease is
// lost though its validity has not passed; a Release with a failed try
// reports it lost.
func (f *replyLost) lostBeforeRelease(t *testing.T) {
	l, _, ls := f.hold(t, "lost-before-release")
	f.deleteEntry(t, l, ls)
	wantErr(t, ls.Extend(f.ctx, time.Minute), distlock.ErrLeaseLost)
	etcdlock.SetDeleteRepliesLost(t, 1)
	wantErr(t, ls.Release(f.ctx), distlock.ErrLeaseLost)
}

// leaseRevoked: the lock's etcd lease was revoked (its entry went with
// it) before the session noticed; a Release with a failed try sends a
// keepalive, learns that the lease is gone, and reports the lock lost.
func (f *replyLost) leaseRevoked(t *testing.T) {
	l, _, ls := f.hold(t, "lease-revoked")
	entry := etcdlock.HeldDriver(l, ls).Entry()
	id, err := strconv.ParseInt(path.Base(entry), 16, 64)
	if err != nil {
		t.Fatalf("lease ID of entry %s: %v", entry, err)
	}
	if _, err := f.admin.Revoke(f.ctx, clientv3.LeaseID(id)); err != nil {
		t.Fatal(err)
	}
	etcdlock.SetDeleteRepliesLost(t, 1)
	wantErr(t, ls.Release(f.ctx), distlock.ErrLeaseLost)
}
