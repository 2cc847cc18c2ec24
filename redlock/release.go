package redlock

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/distlock/distlock/internal/retry"
)

// Bounds of the delay between background release tries (see
// retryRelease): the first waits releaseRetryMin, each next one twice
// the last, up to releaseRetryMax.
const (
	releaseRetryMin = 10 * time.Millisecond
	releaseRetryMax = time.Second
)

// Release implements lease.Driver: compare-and-delete on every node, each
// within the node timeout. It fails with a *QuorumError (matching
// distlock.ErrUnavailable) if fewer than a majority confirmed. Either
// way, a node that could not be reached (its connection failed, or a new
// one could not be opened within the node timeout) is sent the release
// again in the background (retryRelease), so that its copy of the key
// does not block the next acquirer until the TTL runs out.
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
	until := time.Now().Add(d.ttl) // no copy of the key outlives this
	late := d.l.lateCleanup(d.ttl, func(int) []string { return cmd })
	res := d.l.fanoutOne(ctx, time.Now().Add(d.l.opts.nodeTimeout(d.ttl)), func(int) []string { return cmd }, late)
	_, err := d.l.tally(res, "release", d.key)
	if missed := unreached(res); len(missed) > 0 {
		d.l.retryRelease(missed, cmd, until)
	}
	return err
}

// unreached lists the nodes of a fan-out whose request may not have
// reached them: a transport error, not a reply (a server's error reply
// means it ran the request) and not a late one (the late func follows
// those up).
func unreached(res []result) []int {
	var out []int
	for i, r := range res {
		var se serverError
		if r.err != nil && !r.late && !errors.As(r.err, &se) {
			out = append(out, i)
		}
	}
	return out
}

// retryRelease sends cmd, a release, again to the nodes in idx, in the
// background, until every one of them has answered, until passes (the key
// has expired everywhere by then) or the Locker closes. Each try allows
// DialTimeout for connecting and the reply; the tries are releaseRetryMin
// apart at first, doubling up to releaseRetryMax (Redisson likewise
// retries an unlock that failed, retryAttempts times). A late release is
// harmless: it deletes the key only where it still holds this lease's
// token.
func (l *Locker) retryRelease(idx []int, cmd []string, until time.Time) {
	if !l.enter() {
		return // closed: the key expires with its TTL
	}
	go func() {
		defer l.wg.Done()
		b := retry.Backoff{Min: releaseRetryMin, Max: releaseRetryMax}
		for len(idx) > 0 && b.Wait(l.closing.Done()) && time.Now().Before(until) {
			deadline := time.Now().Add(l.opts.DialTimeout)
			if until.Before(deadline) {
				deadline = until
			}
			late := l.lateCleanup(time.Until(until), func(int) []string { return cmd })
			res := l.fanoutOne(l.closing.Context(), deadline, func(i int) []string {
				if slices.Contains(idx, i) {
					return cmd
				}
				return nil
			}, late)
			idx = unreached(res) // a skipped node has no error
		}
	}()
}
