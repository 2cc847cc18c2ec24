package etcdlock

import (
	"context"
	"errors"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
)

// driver is the lease.Driver of one held lock: its entry my, created at
// revision rev (the fence), on session s.
type driver struct {
	l   *Locker
	s   *session
	key string
	my  string
	rev int64
	ttl time.Duration

	mu       sync.Mutex
	ls       *lease.Lease
	reap     *time.Timer // fires after the lock's own validity
	finished bool        // detached from the session

	// deleting holds one token while the entry is being deleted: the
	// reaper, Release and the background retry of a failed Release take
	// turns, and none deletes after another has (see deleteOnce).
	deleting chan struct{}
}

// deleteOnce deletes the entry and frees its key on the session, unless
// that has already been done (d.finished): a second deletion would free
// the key again, when by then it may be reserved by a newer acquisition
// of the same key on the same session, which the next Acquire would then
// adopt as its own (two holders, one fence). It reports what the deletion
// found (deletedGone if none was made). held (Release only): the lock was
// held when the caller began; then a deletion that may have been an
// earlier failed try's is confirmed by a keepalive (see Release) while
// the lock still keeps its session in use, so that the session cannot
// be dropped and revoked as unused before the keepalive is answered.
func (d *driver) deleteOnce(ctx context.Context, held bool) (deletion, error) {
	select {
	case d.deleting <- struct{}{}:
		defer func() { <-d.deleting }()
	case <-ctx.Done():
		return deletedGone, ctx.Err()
	}
	d.mu.Lock()
	done := d.finished
	d.mu.Unlock()
	if done {
		return deletedGone, nil // deleted already (the reaper, or a retry)
	}
	found, err := d.l.deleteEntry(ctx, d.s, d.key, d.rev)
	if err == nil {
		if testHookBeforeConfirm != nil {
			testHookBeforeConfirm(d.s)
		}
		if found == deletedMaybe && held && d.leaseAlive(ctx) {
			found = deletedOurs // the failed try deleted it (see Release)
		}
		d.finish()
	}
	return found, err
}

// testHookBeforeConfirm, set by tests only (nil in production), runs in
// deleteOnce after a deletion, before its confirmation and before the
// lock leaves the session s.
var testHookBeforeConfirm func(s *session)

// attach registers the lock with its session (which tells it when the
// session dies) and arms the reaper, which deletes the entry if the lock
// runs out of validity without a release (the shared lease would keep it).
func (d *driver) attach(ls *lease.Lease, vu time.Time) {
	l := d.l
	d.mu.Lock()
	d.ls = ls
	d.reap = time.AfterFunc(time.Until(vu)+time.Millisecond, d.reapCheck)
	d.mu.Unlock()
	l.mu.Lock()
	d.s.locks[d] = struct{}{}
	l.held[ls] = d
	l.mu.Unlock()
	if err := d.s.err(); err != nil { // died before it could tell us
		d.lose(err)
	}
}

// lose reports the lock lost (its session died).
func (d *driver) lose(cause error) {
	d.mu.Lock()
	ls := d.ls
	d.mu.Unlock()
	if ls != nil {
		ls.Lose(cause)
	}
}

// reapCheck runs after the lock's validity: if it was extended meanwhile
// it re-arms; if it ran out, it deletes the entry.
func (d *driver) reapCheck() {
	d.mu.Lock()
	ls, finished := d.ls, d.finished
	d.mu.Unlock()
	if ls == nil || finished {
		return
	}
	err := ls.Err()
	if err == nil {
		d.mu.Lock()
		d.reap.Reset(time.Until(ls.ValidUntil()) + time.Millisecond)
		d.mu.Unlock()
		return
	}
	if errors.Is(err, distlock.ErrReleased) {
		return
	}
	d.l.lc.Go(func() {
		_, _ = d.deleteOnce(d.l.lc.Closing().Context(), false) // on failure, Release tries again
	})
}

// finish detaches the lock from its session, once. The Locker keeps it
// (for HeldCmp) until it is released.
func (d *driver) finish() {
	d.mu.Lock()
	if d.finished {
		d.mu.Unlock()
		return
	}
	d.finished = true
	if d.reap != nil {
		d.reap.Stop()
	}
	d.mu.Unlock()
	l := d.l
	l.mu.Lock()
	delete(d.s.locks, d)
	l.mu.Unlock()
}

// forget drops the released lock from the Locker.
func (d *driver) forget() {
	d.mu.Lock()
	ls := d.ls
	d.mu.Unlock()
	if ls != nil {
		d.l.mu.Lock()
		delete(d.l.held, ls)
		d.l.mu.Unlock()
	}
}

// Extend implements lease.Driver: a keepalive of the session sent after
// the call started, and a read-only transaction confirming that the entry
// still exists with our create revision. The new validity is the start
// plus min(ttl, the session's TTL) minus drift.
func (d *driver) Extend(ctx context.Context, ttl time.Duration) (time.Time, error) {
	if !d.l.lc.Enter() {
		return time.Time{}, unavailable("extend", distlock.ErrClosed)
	}
	defer d.l.lc.Leave()
	start := time.Now()
	r := d.s.renewAfter(start)
	var resp *clientv3.TxnResponse
	_, err := d.l.do(ctx, d.ttl, time.Time{}, 0, d.s.dead, func(ctx context.Context) error {
		var err error
		resp, err = d.l.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(d.my), "=", d.rev)).Commit()
		return err
	})
	if err != nil {
		if serr := d.s.err(); serr != nil {
			return time.Time{}, errors.Join(distlock.ErrLeaseLost, serr)
		}
		return time.Time{}, unavailable("extend", err)
	}
	if !resp.Succeeded {
		return time.Time{}, ErrKeyGone
	}
	if err := r.wait(ctx, d.s, d.l.opts.tryTimeout(d.ttl)); err != nil {
		if errors.Is(err, distlock.ErrLeaseLost) || errors.Is(err, ErrSessionExpired) {
			return time.Time{}, errors.Join(distlock.ErrLeaseLost, err)
		}
		return time.Time{}, unavailable("extend: keepalive", err)
	}
	vu := start.Add(min(ttl, d.s.ttl) - drift(min(ttl, d.s.ttl)))
	d.mu.Lock()
	if d.reap != nil && !d.finished {
		d.reap.Reset(time.Until(vu) + time.Millisecond)
	}
	d.mu.Unlock()
	return vu, nil
}

// Release implements lease.Driver: delete the entry, at most once per lock
// (deleteOnce), so a retried or late release never deletes a newer entry
// of the same key and lease (see deleteEntry). It returns ErrKeyGone if
// the entry was gone already. If the cluster cannot be reached,
// the deletion goes on in the background (the error matches
// distlock.ErrUnavailable).
//
// When a try failed (its reply may have been lost) and the next try found
// the entry gone, the failed try most likely deleted it. Release then
// succeeds if, when it began, the lease was not reported lost and its
// validity had not passed, and a keepalive sent after the deletion
// renews the session's etcd lease: so neither the lease's expiry nor its
// revocation removed the entry, and our reaper runs only after the
// validity. An entry that another client deleted since the last
// successful Extend (or the acquisition) cannot be told apart from ours
// in that case, and counts as released. Otherwise Release returns
// ErrKeyGone, as it would without the failed try.
func (d *driver) Release(ctx context.Context) error {
	held := d.heldAt(time.Now())
	d.mu.Lock()
	if d.reap != nil {
		d.reap.Stop()
	}
	d.mu.Unlock()
	d.forget()
	if !d.l.lc.Enter() {
		return unavailable("release", distlock.ErrClosed)
	}
	defer d.l.lc.Leave()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	found, err := d.deleteOnce(cctx, held)
	if err != nil {
		d.l.abandonRelease(d)
		return unavailable("release", err)
	}
	if found != deletedOurs {
		return ErrKeyGone
	}
	return nil
}

// heldAt reports whether, at t, the lock had not been reported lost and
// its validity had not passed. (Release runs before the lease records its
// own release, so Err is nil then unless the lock was lost.)
func (d *driver) heldAt(t time.Time) bool {
	d.mu.Lock()
	ls := d.ls
	d.mu.Unlock()
	return ls != nil && ls.Err() == nil && t.Before(ls.ValidUntil())
}

// leaseAlive sends a keepalive of the session's etcd lease now and
// reports whether it renewed the lease (bounded by the keepalive timeout).
func (d *driver) leaseAlive(ctx context.Context) bool {
	if d.s.isDead() {
		return false
	}
	return d.s.renewAfter(time.Now()).wait(ctx, d.s, d.l.opts.keepAliveTimeout(d.ttl)) == nil
}

// abandonRelease keeps deleting a released lock's entry in the background.
func (l *Locker) abandonRelease(d *driver) {
	started := l.lc.Go(func() {
		_, _ = d.deleteOnce(l.lc.Closing().Context(), false)
		d.finish() // deleted, or the Locker closed: either way, done with it
	})
	if !started {
		d.finish()
	}
}
