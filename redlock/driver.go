package redlock

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/validity"
)

// driver is the lease.Driver of one held key.
type driver struct {
	l     *Locker
	k     keys
	key   string
	token string
	fence int64
	// wb: some granting node's counter was below fence at acquisition,
	// so Extend and Release repeat the write-back (else Extend passes 0
	// and Release runs the script without the counter: every granting
	// node already had it, and a counter never decreases).
	wb  bool
	ttl time.Duration // the acquisition's, for the node timeout of Release
	// longest is the longest TTL set on the key so far (by the
	// acquisition or an Extend), in nanoseconds: no copy of the key
	// outlives now + longest.
	longest atomic.Int64
}

// newDriver returns the driver of a lock granted with ttl.
func newDriver(l *Locker, k keys, key, token string, fence int64, wb bool, ttl time.Duration) *driver {
	d := &driver{l: l, k: k, key: key, token: token, fence: fence, wb: wb, ttl: ttl}
	d.longest.Store(int64(ttl))
	return d
}

// lengthen records that an Extend set ttl on the key.
func (d *driver) lengthen(ttl time.Duration) {
	for {
		cur := d.longest.Load()
		if int64(ttl) <= cur || d.longest.CompareAndSwap(cur, int64(ttl)) {
			return
		}
	}
}

// Extend implements lease.Driver: compare-and-PEXPIRE on every node,
// which never re-creates the key. It holds if a majority confirmed within
// the new validity (measured from before the requests).
func (d *driver) Extend(ctx context.Context, ttl time.Duration) (time.Time, error) {
	cmd := []string{"EVALSHA", extendScript.sha, "2", d.k.lock, d.k.fence, d.token, ms(ttl), d.fenceArg()}
	start := time.Now()
	got, qerr := d.l.confirm(ctx, start.Add(d.l.opts.nodeTimeout(ttl)), "extend", d.key, cmd, nil)
	if qerr != nil {
		return time.Time{}, qerr
	}
	d.lengthen(ttl)
	vu := validity.Until(start, ttl, d.l.opts.drift(ttl))
	if time.Now().After(vu) {
		return time.Time{}, fmt.Errorf("%w: redlock: extend %q: %d nodes confirmed after the new validity ran out", distlock.ErrUnavailable, d.key, got)
	}
	return vu, nil
}

// confirm runs a compare-and-X script on every node and returns how many
// answered 1, or a *QuorumError if fewer than a majority did. late, if
// not nil, follows up on the nodes that did not answer in time (see
// fanout).
func (l *Locker) confirm(ctx context.Context, deadline time.Time, op, key string, cmd []string, late func(int, *conn)) (int, error) {
	res := l.fanoutOne(ctx, deadline, func(int) []string { return cmd }, late)
	return l.tally(res, op, key)
}

// fanoutOne runs cmd(i) on each node i (nil: skip it) through fanout and
// hands the connections back.
func (l *Locker) fanoutOne(ctx context.Context, deadline time.Time, cmd func(i int) []string, late func(int, *conn)) []result {
	res, conns := l.fanout(ctx, deadline, func(i int) [][]string {
		if c := cmd(i); c != nil {
			return [][]string{c}
		}
		return nil
	}, late)
	l.done(conns)
	return res
}

// tally counts the nodes whose compare-and-X script answered 1, and
// returns a *QuorumError if fewer than a majority did.
func (l *Locker) tally(res []result, op, key string) (int, error) {
	got := 0
	var fails []NodeError
	for i, r := range res {
		switch v, _ := r.v.(int64); {
		case r.err != nil:
			fails = append(fails, NodeError{l.nodes[i].addr, unavailable(r.err)})
		case v == 1:
			got++
		default:
			fails = append(fails, NodeError{l.nodes[i].addr, ErrNotOurs})
		}
	}
	if got >= l.quorum {
		return got, nil
	}
	return got, &QuorumError{Op: op, Key: key, Nodes: fails, Acquired: got, Needed: l.quorum}
}

// Release implements lease.Driver: compare-and-delete on every node, each
// within the node timeout. It fails with a *QuorumError (matching
// distlock.ErrUnavailable) if fewer than a majority confirmed. Either
// way, a node whose release failed (its connection failed, a new one
// could not be opened within the node timeout, it answered with an error,
// or it answered neither in time nor later, see below) is sent the
// release again in the background (retryRelease), so that its copy of
// the key does not block the next acquirer until the TTL runs out.
func (d *driver) Release(ctx context.Context) error {
	cmd := []string{"EVALSHA", releaseScript.sha, "2", d.k.lock, d.k.queue, d.token}
	if d.wb {
		cmd = []string{"EVALSHA", releaseFenced.sha, "3", d.k.lock, d.k.fence, d.k.queue, d.token, d.fenceArg()}
	}
	// A node that does not answer in time keeps its connection: the
	// request is on its way, and closing the connection under it could
	// lose it, leaving the key locked there for the TTL. The late func
	// reads its reply in the background (resending the compare-and-delete
	// behind it, which can only find nothing more to delete).
	until := time.Now().Add(time.Duration(d.longest.Load())) // no copy of the key outlives this
	late := d.l.lateCleanup(d.ttl, func(int) []string { return cmd }, func(i int) {
		d.l.retryRelease([]int{i}, cmd, until) // the late read or its clean-up failed too
	})
	res := d.l.fanoutOne(ctx, time.Now().Add(d.l.opts.nodeTimeout(d.ttl)), func(int) []string { return cmd }, late)
	_, err := d.l.tally(res, "release", d.key)
	if missed := unreached(res); len(missed) > 0 {
		d.l.retryRelease(missed, cmd, until)
	}
	return err
}
