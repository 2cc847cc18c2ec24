package redissingle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/retry"
)

// errQueued is the attempt error of a waiter that is queued on the server
// and has had no wake-up: it is answered locally, without a request.
var errQueued = fmt.Errorf("%w: queued, waiting for the release to hand the key over", distlock.ErrNotAcquired)

// enter begins a TryAcquire or Acquire: it checks key (distlock.CheckKey,
// checkKey), resolves opts over the Locker's defaults, and registers the
// call in flight, which the caller ends with l.lc.Leave. A bad key or
// option returns an error matching distlock.ErrInvalidArgument, a closed
// Locker distlock.ErrClosed.
func (l *Locker) enter(key string, opts []distlock.Option) (distlock.Options, error) {
	o, err := l.opts.Lock.ResolveFor(key, opts...)
	if err == nil {
		err = checkKey(l.opts.Prefix, key)
	}
	if err != nil {
		return distlock.Options{}, err
	}
	if !l.lc.Enter() {
		return distlock.Options{}, distlock.ErrClosed
	}
	return o, nil
}

// TryAcquire implements distlock.Locker: one attempt, one round trip
// (SET NX PX and the fence, in one script). It does not wait behind the
// wait queue: in the moment between a holder's expiry (not a release, which
// hands the key over directly) and the first queued waiter noticing it, a
// TryAcquire can take the key ahead of them; its release then hands the
// key to the first waiter, as any release does. If the reply is lost, the
// error matches distlock.ErrUnavailable and a background clean-up releases
// the key in case the attempt took it.
// Keys are checked as Acquire says.
func (l *Locker) TryAcquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.enter(key, opts)
	if err != nil {
		return nil, err
	}
	defer l.lc.Leave()
	if err := retry.Ended(ctx, nil); err != nil {
		return nil, err
	}
	if err := l.checkServer(ctx); err != nil {
		return nil, err
	}
	return l.tryOnce(ctx, l.keysFor(key), key, o)
}

// Acquire implements distlock.Locker. The first attempt queues the caller
// on the server if the key is held; the release hands the key over and
// wakes this call through the Locker's pub/sub connection (opened on the
// first Acquire), so a queued call makes no request until then. It asks
// the server again when the holder's TTL runs out (an expired holder sends
// no notification), at least every Options.PollInterval, and every retry
// delay (WithRetryDelay) while the pub/sub connection is down or the
// server unreachable. When ctx ends, the error matches
// distlock.ErrNotAcquired and ctx.Err(), and a background clean-up leaves
// the queue (and passes the key on if it was handed over meanwhile).
//
// A key is any non-empty byte string of at most MaxKeyLen bytes whose lock
// key (Options.Prefix + key) does not contain "distlock:", the part of
// every name the Lockers use for themselves (fence counters, wait queues,
// channels); other keys are refused, by TryAcquire too, with an error
// matching distlock.ErrInvalidArgument.
func (l *Locker) Acquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.enter(key, opts)
	if err != nil {
		return nil, err
	}
	defer l.lc.Leave()
	w := l.newWaiter(o)
	if w == nil {
		return nil, distlock.ErrClosed
	}
	k := l.keysFor(key)
	// attempt arms the waiter's own timer (expiry, poll interval, retry
	// delay while disconnected) for every next turn, so no extra polling.
	ls, err := retry.Acquire(ctx,
		func(ctx context.Context) (distlock.Lease, error) { return l.attempt(ctx, k, key, w, o) },
		func(ctx context.Context) (<-chan struct{}, func()) {
			l.subscribe(ctx)
			return w.ch, func() {} // the waiter lives until Acquire returns
		})
	l.finish(k, w, err != nil, o.TTL)
	return ls, err
}

// tryOnce is TryAcquire's attempt: the key if it is free.
func (l *Locker) tryOnce(ctx context.Context, k keySet, key string, o distlock.Options) (distlock.Lease, error) {
	token := lease.NewToken()
	start := time.Now()
	a, err := l.take(ctx, k, tryScript, token, "", o.TTL)
	if err != nil {
		if errors.Is(err, errUnknown) {
			l.cleanup(k, token, "", o.TTL)
		}
		return nil, err
	}
	if !a.held {
		return nil, fmt.Errorf("%w: key %q is held", distlock.ErrNotAcquired, key)
	}
	return l.grant(ctx, k, key, token, a.fence, start, o)
}

// attempt is one turn of Acquire's loop, which never sleeps on its own
// (Acquire runs it through retry.Acquire): every turn that
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
		// only if it is missing (acquire.lua's RPUSHX would add a second).
		w.queued, w.gen = true, 0 // gen 0: the next turn polls (after the retry delay), not waiting for a push
		return nil, fmt.Errorf("%w: key %q: the hand-off expired or was superseded before it was taken", distlock.ErrNotAcquired, key)
	}
	ls, err := l.grant(ctx, k, key, w.token, fence, start, o)
	if err != nil {
		w.queued, w.gen = true, 0 // as above: the next turn polls
	}
	return ls, err
}
