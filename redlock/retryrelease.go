package redlock

import (
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
