package zklock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/validity"
)

// expiryGrace is how long after a lease's validity the driver looks
// whether it expired, so that the lease's own timer has fired first.
const expiryGrace = 5 * time.Millisecond

// driver is the lease.Driver of one held lock node.
type driver struct {
	l       *Locker
	s       *session
	key     string
	path    string // our lock node
	sid     int64  // the server session that owns it
	ended   <-chan struct{}
	timeout time.Duration // sid's negotiated session timeout
	version int32         // the node's data version, for MultiIfHeld

	mu        sync.Mutex
	ls        *lease.Lease
	lostCause error // a loss reported before ls was set
	timer     *time.Timer
	released  bool
	cleaned   bool
}

// validity is how long after the start of a request that confirmed the
// node a lease of ttl may count on it.
func (d *driver) validity(ttl time.Duration) time.Duration {
	return min(ttl, d.l.sessionValidity(d.timeout))
}

// setLease attaches the granted lease and starts watching its expiry.
func (d *driver) setLease(ls *lease.Lease) {
	d.mu.Lock()
	d.ls = ls
	cause := d.lostCause
	d.timer = time.AfterFunc(time.Until(ls.ValidUntil())+expiryGrace, d.checkExpiry)
	d.mu.Unlock()
	if cause != nil {
		ls.Lose(cause)
	}
}

// lose reports a loss the session saw (node deleted, session over).
func (d *driver) lose(cause error) {
	d.mu.Lock()
	ls := d.ls
	if ls == nil {
		d.lostCause = cause
	}
	d.mu.Unlock()
	if ls != nil {
		ls.Lose(cause)
	}
}

// checkExpiry runs after the lease's validity: a lease that was extended
// is looked at again later; one that is lost (expired without extension)
// has its node deleted, so that the key is free after the TTL, as on every
// backend, although the session that owns the node lives on.
func (d *driver) checkExpiry() {
	d.mu.Lock()
	if d.released || d.cleaned {
		d.mu.Unlock()
		return
	}
	if d.ls.Err() == nil {
		d.timer.Reset(max(time.Until(d.ls.ValidUntil()), 0) + expiryGrace)
		d.mu.Unlock()
		return
	}
	d.cleaned = true
	d.mu.Unlock()
	d.s.unhold(d)
	d.l.cleanup(task{s: d.s, path: d.path})
}

// testHookBeforeExtend, set by tests only, runs at the start of Extend.
var testHookBeforeExtend func(ctx context.Context)

// Extend implements lease.Driver: it checks through the leader that the
// lock node still exists (a sync, then a read) and returns start +
// min(ttl, sessionValidity), start taken before the sync.
// It never re-creates a node.
//
// A follower answers reads from its own copy, and goes on doing so for up
// to syncLimit ticks after it lost the leader, while the leader, no longer
// told that the session is alive, expires it and hands the key on. The
// sync is forwarded to the leader and the read is answered after it, so
// an extension succeeds only while the server reaches the leader, which
// has the session alive and the node in place as of after start.
func (d *driver) Extend(ctx context.Context, ttl time.Duration) (time.Time, error) {
	if testHookBeforeExtend != nil {
		testHookBeforeExtend(ctx)
	}
	if isClosed(d.ended) {
		return time.Time{}, d.lost(d.s.why(d.ended))
	}
	start := time.Now()
	ok, err := call(d.l, ctx, func() (existsResult, error) {
		if _, err := d.s.conn.Sync(d.path); err != nil {
			return existsResult{}, err
		}
		ok, st, err := d.s.conn.Exists(d.path)
		return existsResult{ok, st}, err
	}, nil)
	switch {
	case errors.Is(err, zk.ErrSessionExpired):
		return time.Time{}, d.lost(ErrSessionExpired)
	case err != nil:
		return time.Time{}, wrap("extend", err)
	case !ok.ok:
		return time.Time{}, d.lost(ErrNodeDeleted)
	case isClosed(d.ended):
		return time.Time{}, d.lost(d.s.why(d.ended))
	}
	return start.Add(d.validity(ttl)), nil
}

type existsResult struct {
	ok bool
	st *zk.Stat
}

// Release implements lease.Driver: it deletes the lock node. If the node
// was already gone, or the lease had expired or been lost before (the
// node is deleted then all the same), the error matches
// distlock.ErrLeaseLost.
func (d *driver) Release(ctx context.Context) error {
	d.s.unhold(d)
	d.mu.Lock()
	d.released = true
	if d.timer != nil {
		d.timer.Stop()
	}
	ls := d.ls
	d.mu.Unlock()
	d.l.unregister(ls)
	var before error
	if ls != nil {
		if err := ls.Err(); errors.Is(err, distlock.ErrLeaseLost) {
			before = err
		}
	}
	if isClosed(d.ended) {
		d.l.cleanup(task{s: d.s, path: d.path}) // a presumed expiry: the session may live on
		return d.lost(d.s.why(d.ended))
	}
	_, err := call(d.l, ctx, func() (struct{}, error) { return struct{}{}, d.s.conn.Delete(d.path, -1) },
		func(_ struct{}, err error) {
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				d.l.cleanup(task{s: d.s, path: d.path})
			}
		})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return d.lost(ErrNodeDeleted)
	case err != nil && ctx.Err() == nil:
		d.l.cleanup(task{s: d.s, path: d.path})
		return wrap("release", err)
	case err != nil:
		return wrap("release", err)
	case before != nil:
		return fmt.Errorf("%w: zklock: %q had expired before the release (its node was deleted now)", distlock.ErrLeaseLost, d.key)
	}
	return nil
}

// lost returns an error matching distlock.ErrLeaseLost and cause.
func (d *driver) lost(cause error) error {
	return fmt.Errorf("%w: zklock: %q: %w", distlock.ErrLeaseLost, d.key, cause)
}

// sessionValidity is how long after the start of a request that
// confirmed it through the leader a session of the negotiated timeout is
// sure to live (<= 0: not at all). The leader may expire the session a
// timeout after the last activity it heard of, which can be a third of the
// timeout (the client's ping interval) and half a tick (the relay from a
// follower) older than that request: so at most 2/3 x timeout - TickTime/2,
// less the clock drift over the timeout, and at most SafeFraction x
// timeout.
func (l *Locker) sessionValidity(timeout time.Duration) time.Duration {
	bound := timeout*2/3 - l.opts.TickTime/2 - validity.DefaultDrift(timeout)
	return min(time.Duration(l.opts.SafeFraction*float64(timeout)), bound)
}
