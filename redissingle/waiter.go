package redissingle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/retry"
)

// errQueued is the attempt error of a waiter that is queued on the server
// and has had no wake-up: it is answered locally, without a request.
var errQueued = fmt.Errorf("%w: queued, waiting for the release to hand the key over", distlock.ErrNotAcquired)

// waiter is one blocked Acquire call. Its server entry names the Locker's
// channel, the waiter and its token, so that a release can hand the key
// over and notify exactly this waiter.
type waiter struct {
	id, token, entry string
	ch               chan struct{} // capacity 1: a wake-up (hand-off, subscription change, Close)

	// handoff is the fence of a hand-off notification not yet taken, 0
	// if none. Guarded by Locker.lc's mutex (the subscriber writes it).
	handoff uint64

	// Owned by the Acquire call.
	queued bool        // our entry may be queued, or the key ours unbeknownst to us
	gen    uint64      // subscription generation that covered our last request; 0: none
	pollAt time.Time   // when to ask the server again even without a wake-up
	timer  *time.Timer // wakes ch for the next turn
}

func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// newWaiter registers a waiter for an Acquire with options o; it returns
// nil once Close has begun, so that no waiter Close did not wake can
// block.
func (l *Locker) newWaiter(o distlock.Options) *waiter {
	l.lc.Lock()
	defer l.lc.Unlock()
	if l.lc.ClosedLocked() {
		return nil
	}
	l.nextID++
	id := strconv.FormatUint(l.nextID, 16)
	token := lease.NewToken()
	w := &waiter{
		id: id, token: token, ch: make(chan struct{}, 1),
		entry: l.channel + "|" + id + "|" + token + "|" + strconv.FormatInt(ms(o.TTL), 10),
	}
	l.waiters[id] = w
	return w
}

// attempt is one turn of Acquire's loop, which never sleeps on its own
// (Acquire runs it through retry.AcquirePushOnly): every turn that
// does not return a lease arms w's timer for the next turn. A queued
// waiter whose subscription has stayed up since its last request answers
// locally until a hand-off arrives or pollAt passes (the holder's TTL, at
// most PollInterval); otherwise it asks the server, every retry delay
// while push is not available.
func (l *Locker) attempt(ctx context.Context, k keySet, key string, w *waiter, o distlock.Options) (distlock.Lease, error) {
	l.lc.Lock()
	if l.lc.ClosedLocked() {
		l.lc.Unlock()
		return nil, distlock.ErrClosed
	}
	fence := w.handoff
	w.handoff = 0
	var gen uint64
	if l.subUp {
		gen = l.subGen
	}
	l.lc.Unlock()
	retryDelay := retry.Delay(o.RetryMin, o.RetryMax)
	if fence != 0 {
		ls, err := l.takeHandoff(ctx, k, key, w, fence, o)
		if err != nil {
			w.arm(retryDelay)
		}
		return ls, err
	}
	if w.queued && gen != 0 && w.gen == gen {
		if left := time.Until(w.pollAt); left > 0 {
			w.arm(left)
			return nil, errQueued
		}
	}
	if err := l.checkServer(ctx); err != nil {
		w.arm(retryDelay)
		return nil, err
	}
	s := l.scripts.acquire
	if w.queued {
		s = l.scripts.poll
	}
	start := time.Now()
	a, err := l.take(ctx, k, s, w.token, w.entry, o.TTL)
	switch {
	case err != nil:
		if errors.Is(err, errUnknown) {
			w.queued = true
		}
		w.gen = 0
		w.arm(retryDelay)
		return nil, err
	case a.held:
		ls, err := l.grant(ctx, k, key, w.token, a.fence, start, o)
		if err != nil { // expired in flight, and released: queue again
			w.queued, w.gen = false, 0
			w.arm(retryDelay)
		}
		return ls, err
	}
	w.queued, w.gen = true, gen
	if gen != 0 {
		w.pollAt = start.Add(pollWait(a.pttl, l.opts.PollInterval))
		w.arm(time.Until(w.pollAt))
	} else {
		w.arm(retryDelay)
	}
	return nil, fmt.Errorf("%w: key %q is held", distlock.ErrNotAcquired, key)
}

// arm makes w's channel fire after d, when its Acquire must try again.
func (w *waiter) arm(d time.Duration) {
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.wake)
		return
	}
	w.timer.Reset(d)
}

// pollWait is how long a queued waiter may rely on push alone, given the
// holder's remaining TTL in ms: until the holder expires, at most limit.
func pollWait(pttl int64, limit time.Duration) time.Duration {
	switch {
	case pttl == -1: // no TTL: only a release (or an operator) frees it
		return limit
	case pttl <= 0:
		return 0
	}
	return min(time.Duration(pttl+1)*time.Millisecond, limit)
}

// takeHandoff turns a hand-off notification into a lease. The key is
// first re-armed from now with a compare-and-PEXPIRE on the value the
// hand-off wrote (our token and the notified fence), and validity counts
// from that request: a notification can be stale (read after a process
// pause, when the key handed to us has expired and another client holds
// it, or has been handed to us again with a newer fence), so no validity
// may be inferred from when the notification or an earlier "held" reply
// arrived, and no fence from an old notification.
func (l *Locker) takeHandoff(ctx context.Context, k keySet, key string, w *waiter, fence uint64, o distlock.Options) (distlock.Lease, error) {
	start := time.Now()
	held, err := l.confirm(ctx, k, w.token, fence, o.TTL)
	if err != nil {
		var re *ReplicationError
		w.queued, w.gen = !errors.As(err, &re), 0
		return nil, err
	}
	if !held {
		// Popped by the hand-off, but a poll may have put the entry back:
		// stay "queued" so the next turn polls, which re-adds the entry
		// only if it is missing (acquireLua's RPUSHX would add a second).
		w.queued, w.gen = true, 0 // gen 0: the next turn polls (after the retry delay), not waiting for a push
		return nil, fmt.Errorf("%w: key %q: the hand-off expired or was superseded before it was taken", distlock.ErrNotAcquired, key)
	}
	ls, err := l.grant(ctx, k, key, w.token, fence, start, o)
	if err != nil {
		w.queued, w.gen = true, 0 // as above: the next turn polls
	}
	return ls, err
}

// maxLeaving bounds Locker.leaving: beyond it the oldest records are
// dropped, and a hand-off to one of those waiters waits for the next
// waiter's poll.
const maxLeaving = 1024

// leaver is a waiter that gave up and may still be queued: its keys and
// token, for passing on a hand-off that reaches it (see deliver).
type leaver struct {
	k     keySet
	token string
	ttl   time.Duration
}

// finish unregisters w when its Acquire returns; if it failed while it
// may be queued or hold the key, a clean-up leaves the queue and passes
// the key on. Until that clean-up has run, w stays in l.leaving: its
// entry may still be queued (the clean-up gives up once ttl has passed),
// and deliver passes on a hand-off to it.
func (l *Locker) finish(k keySet, w *waiter, failed bool, ttl time.Duration) {
	l.lc.Lock()
	delete(l.waiters, w.id)
	handed := w.handoff != 0
	clean := failed && (w.queued || handed)
	if clean {
		l.leaving[w.id] = leaver{k: k, token: w.token, ttl: ttl}
		l.leavingOrder = append(l.leavingOrder, w.id)
		if len(l.leavingOrder) > maxLeaving {
			delete(l.leaving, l.leavingOrder[0])
			l.leavingOrder = slices.Delete(l.leavingOrder, 0, 1)
		}
	}
	l.lc.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	if clean {
		l.cleanupThen(k, w.token, w.entry, ttl, func() {
			l.lc.Lock()
			delete(l.leaving, w.id)
			l.lc.Unlock()
		})
	}
}
