package etcdlock

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
)

// Prefix exposes the etcd prefix of a key's lock to the tests.
func (l *Locker) Prefix(key string) string { return l.prefix(key) }

// LockDriver exposes a held lock's driver to the tests that run its
// deletion paths (reaper, Release, the background retry) in an order they
// choose instead of the one the timers happen to produce.
type LockDriver struct{ d *driver }

// HeldDriver returns the driver of ls, which l holds (nil if it does not).
func HeldDriver(l *Locker, ls distlock.Lease) *LockDriver {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := l.held[ls]; d != nil {
		return &LockDriver{d}
	}
	return nil
}

// Entry is the lock's etcd key (the lock's prefix and its session's lease).
func (x *LockDriver) Entry() string { return x.d.my }

// RunOut does what the expiry of the lock's own validity does while its
// session lives on: the lease is reported lost, then the reaper runs and
// deletes the entry in the background. It returns once the entry is
// deleted and the lock detached from its session (or ctx ends).
func (x *LockDriver) RunOut(ctx context.Context) error {
	x.d.lose(lease.ErrExpired)
	x.d.reapCheck()
	for !x.finished() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

func (x *LockDriver) finished() bool {
	x.d.mu.Lock()
	defer x.d.mu.Unlock()
	return x.d.finished
}

// DeleteLate runs the deletion that a reaper goroutine, or the background
// retry of a failed Release, runs: one that may start after another path
// has deleted the entry already. It reports whether it deleted the
// lock's own entry.
func (x *LockDriver) DeleteLate(ctx context.Context) (bool, error) {
	found, err := x.d.deleteOnce(ctx, false)
	return found == deletedOurs, err
}

// Reserved reports whether the lock's key is still reserved on its session
// (no other acquisition of the key through this Locker may use it).
func (x *LockDriver) Reserved() bool {
	x.d.l.mu.Lock()
	defer x.d.l.mu.Unlock()
	return x.d.s.keys[x.d.key]
}

// Unreserve frees the lock's key on its session while the lock is held,
// as a wrong deletion path would: the next acquisition of the key through
// this Locker may then pick the session whose entry is this lock's.
func (x *LockDriver) Unreserve() { x.d.l.detach(x.d.s, x.d.key) }

// QueueRead runs the waiter's queue read for the entry my of key (created
// at rev) after its predecessor's deletion at revision gone (0: none seen),
// and reports what it saw: the response's revision, whether my exists and
// how many entries ahead of my it found.
func (l *Locker) QueueRead(ctx context.Context, key, my string, rev, gone int64) (revision int64, mine bool, ahead int, err error) {
	st, err := l.queueRead(ctx, l.prefix(key), my, rev, gone)
	if err != nil || st.ahead == nil {
		return st.revision, st.mine, 0, err
	}
	return st.revision, st.mine, 1, nil
}

// SetBeforeWatch makes f run before every waiter starts watching its
// predecessor (the etcd key pred); nil removes it.
func SetBeforeWatch(f func(pred string)) { testHookBeforeWatch = f }

// KeeperRev is the revision the stream keeper's watch starts at.
const KeeperRev = keeperRev

// SetDeleteRepliesLost makes the next n deletions of an entry that the
// server applies fail as if their replies were lost (the try timed out
// after it was applied); the test's cleanup removes the hook.
func SetDeleteRepliesLost(t testing.TB, n int) {
	var left atomic.Int64
	left.Store(int64(n))
	testHookDeleted = func() error {
		if left.Add(-1) >= 0 {
			return context.DeadlineExceeded
		}
		return nil
	}
	t.Cleanup(func() { testHookDeleted = nil })
}

// WakeSessionBeforeConfirm makes every deletion, before it is confirmed,
// wake its session's loop (as a detach does) and pause for d, so that the
// loop may drop and revoke the session if it looks unused; the test's
// cleanup removes the hook.
func WakeSessionBeforeConfirm(t testing.TB, d time.Duration) {
	testHookBeforeConfirm = func(s *session) {
		select {
		case s.kick <- struct{}{}:
		default:
		}
		time.Sleep(d)
	}
	t.Cleanup(func() { testHookBeforeConfirm = nil })
}

// SetBeforeEnqueueTry makes f run before each try of every enqueue, with
// the try's number (from 1); the test's cleanup removes it.
func SetBeforeEnqueueTry(t testing.TB, f func(try int)) {
	testHookEnqueueTry = f
	t.Cleanup(func() { testHookEnqueueTry = nil })
}

// SetBeforeGrant makes f run at the start of every grant of a lock whose
// entry is queued (nil: none); the test's cleanup removes it.
func SetBeforeGrant(t testing.TB, f func()) {
	testHookBeforeGrant = f
	t.Cleanup(func() { testHookBeforeGrant = nil })
}

// SetBeforeAttach makes f run in every grant after the lease is made and
// before it is attached to its session (nil: none); the test's cleanup
// removes it.
func SetBeforeAttach(t testing.TB, f func()) {
	testHookBeforeAttach = f
	t.Cleanup(func() { testHookBeforeAttach = nil })
}

// SessionDone is closed when the lock's session (its etcd lease) dies.
func (x *LockDriver) SessionDone() <-chan struct{} { return x.d.s.dead }
