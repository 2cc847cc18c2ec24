package redlock

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/distlock/distlock/internal/retry"
)

// Bounds of the delay between a node's background release rounds (see
// retryRelease): the first waits releaseRetryMin, each next one after a
// failed round twice the last, up to releaseRetryMax.
const (
	releaseRetryMin = 10 * time.Millisecond
	releaseRetryMax = time.Second
)

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

// unreached lists the nodes of a fan-out whose request failed: a
// transport error, or an error reply (NOSCRIPT, BUSY, LOADING, READONLY:
// the script did not run; a release is idempotent, so sending it again is
// safe whatever the error), but not a late reply (the late func follows
// those up).
func unreached(res []result) []int {
	var out []int
	for i, r := range res {
		if r.err != nil && !r.late {
			out = append(out, i)
		}
	}
	return out
}

// maxPendingReleases bounds the releases one node holds for its retrier
// (retryRelease); beyond it the oldest is dropped, and its key expires
// with its TTL as it would have without the retry.
const maxPendingReleases = 1024

// releaseRetrier holds the releases a node has yet to be sent again, and
// runs one goroutine (at most) that sends them.
type releaseRetrier struct {
	mu      sync.Mutex
	pending []*pendingRelease
	running bool
}

// pendingRelease is one release to send again, until its key's TTL ends.
type pendingRelease struct {
	cmd   []string
	until time.Time
}

// retryRelease queues cmd, a release, to be sent again to the nodes in
// idx, which the release could not reach, until until (the key has
// expired everywhere by then). Each node has one retrier goroutine at
// most, owned by the Locker: it sends all of that node's pending releases
// pipelined in one round, each round allowing DialTimeout for connecting
// and the replies, the rounds releaseRetryMin apart at first and doubling
// up to releaseRetryMax while they fail, until none is pending or the
// Locker closes. A late
// release is harmless: it deletes the key only where it still holds the
// lease's token. A dead node thus costs one dial per round, whatever the
// release rate.
func (l *Locker) retryRelease(idx []int, cmd []string, until time.Time) {
	p := &pendingRelease{cmd: cmd, until: until}
	for _, i := range idx {
		r := &l.nodes[i].releases
		r.mu.Lock()
		if len(r.pending) == maxPendingReleases {
			r.pending = slices.Delete(r.pending, 0, 1)
		}
		r.pending = append(r.pending, p)
		start := !r.running
		r.running = true
		r.mu.Unlock()
		if start && !l.retryOn(i) {
			r.mu.Lock()
			r.running, r.pending = false, nil // closed: the keys expire with their TTL
			r.mu.Unlock()
		}
	}
}

// retryOn starts node i's retrier goroutine; false if the Locker is
// closed.
func (l *Locker) retryOn(i int) bool {
	return l.lc.Go(func() {
		r := &l.nodes[i].releases
		b := retry.Backoff{Min: releaseRetryMin, Max: releaseRetryMax}
		for {
			stopped := !b.Wait(l.lc.Closing().Done())
			r.mu.Lock()
			now := time.Now()
			r.pending = slices.DeleteFunc(r.pending, func(p *pendingRelease) bool { return !now.Before(p.until) })
			if stopped || len(r.pending) == 0 {
				r.running, r.pending = false, nil
				r.mu.Unlock()
				return
			}
			batch := slices.Clone(r.pending)
			r.mu.Unlock()
			cmds := make([][]string, len(batch))
			for k, p := range batch {
				cmds[k] = p.cmd
			}
			res, conns := l.fanout(l.lc.Closing().Context(), time.Now().Add(l.opts.DialTimeout), func(j int) [][]string {
				if j == i {
					return cmds
				}
				return nil
			}, nil)
			l.done(conns)
			if len(unreached(res)) > 0 {
				continue // the whole batch again: each release is idempotent
			}
			r.mu.Lock()
			r.pending = slices.DeleteFunc(r.pending, func(p *pendingRelease) bool { return slices.Contains(batch, p) })
			r.mu.Unlock()
			b.Reset()
		}
	})
}
