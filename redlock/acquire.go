package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/retry"
	"github.com/distlock/distlock/internal/validity"
)

// TryAcquire implements distlock.Locker: one multiplexed round trip to
// every node, and a second to the granting nodes whose fence counter is
// below the lease's fence (see Fencing in the package documentation). On
// failure the error is a *QuorumError naming each node's answer: it
// matches distlock.ErrNotAcquired for contention and
// distlock.ErrUnavailable for outages (see QuorumError). If another call
// of this Locker holds or is acquiring key, it fails at once, without
// I/O, with an error matching distlock.ErrNotAcquired. An invalid key or
// option, or a node that may evict keys (see Options.AllowEviction),
// returns an error matching distlock.ErrInvalidArgument; after Close it
// returns distlock.ErrClosed.
func (l *Locker) TryAcquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.enter(key, opts)
	if err != nil {
		return nil, err
	}
	defer l.lc.Leave()
	if err := retry.Ended(ctx, nil); err != nil {
		return nil, err
	}
	if err := l.checkServers(ctx, o.TTL); err != nil {
		return nil, err
	}
	if !l.tryTakeSlot(key) {
		return nil, fmt.Errorf("%w: redlock: try-acquire %q: %w", distlock.ErrNotAcquired, key, errLocallyHeld)
	}
	ls, _, err := l.attempt(ctx, key, o, nil)
	if err != nil {
		l.freeSlot(key)
		if ended := retry.Ended(ctx, err); ended != nil {
			err = ended
		}
	}
	return ls, err
}

// outcome describes a failed attempt, for the next wait.
type outcome struct {
	split bool          // we took some nodes but no majority
	pttl  time.Duration // the shortest remaining TTL of another holder seen (0: none)
}

// attempt makes one acquisition: on every node at once, the acquire
// script (w not nil: it queues w on the nodes where the key is held), or,
// for TryAcquire (w nil), a pipelined SET key token NX PX ttl and INCR of
// the fence counter (which spends a number on the nodes where SET failed:
// fences only need to increase); then either the lease or the unlock of
// every node that may hold the key.
func (l *Locker) attempt(ctx context.Context, key string, o distlock.Options, w *waiter) (distlock.Lease, outcome, error) {
	var out outcome
	k := l.keysFor(key)
	token := lease.NewToken()
	nt := l.opts.nodeTimeout(o.TTL)
	var cmds [][]string
	if w == nil {
		cmds = [][]string{{"SET", k.lock, token, "NX", "PX", ms(o.TTL)}, {"INCR", k.fence}}
	} else {
		cmds = [][]string{{"EVALSHA", acquireScript.sha, "3", k.lock, k.fence, k.queue,
			token, ms(o.TTL), l.channel + "|" + w.id, w.score, ms(3 * max(o.TTL, l.opts.PollInterval))}}
	}
	unlock := func(int) []string { // built only when needed: not on the usual path
		return []string{"EVALSHA", releaseScript.sha, "2", k.lock, k.queue, token}
	}
	start := time.Now()
	until := start.Add(o.TTL) // no copy of the key outlives this
	res, conns := l.fanout(ctx, start.Add(nt), func(int) [][]string { return cmds },
		// A node that did not answer in time: unlock behind the request
		// (and if that fails too, in the background, see retryRelease).
		l.lateCleanup(o.TTL, unlock, func(i int) { l.retryRelease([]int{i}, unlock(i), until) }))
	var fence int64
	got := 0
	var fails []NodeError
	var maybe []bool                    // to unlock now: may hold our key and no late clean-up runs
	counters := make([]int64, len(res)) // granting nodes' counters (0: not granted)
	for i, r := range res {
		if r.err != nil {
			fails = append(fails, NodeError{l.nodes[i].addr, unavailable(r.err)})
			if !r.late {
				if maybe == nil {
					maybe = make([]bool, len(res))
				}
				maybe[i] = true
			}
			continue
		}
		var v int64
		if w == nil {
			vs, _ := r.v.([]any)
			v = -1 // held, remaining TTL unknown
			if len(vs) == 2 && vs[0] != nil {
				v, _ = vs[1].(int64)
				if v <= 0 { // cannot happen: the counter only grows
					v = -1
				}
			}
		} else {
			v, _ = r.v.(int64)
		}
		if v > 0 {
			got++
			fence = max(fence, v)
			counters[i] = v
			continue
		}
		fails = append(fails, NodeError{l.nodes[i].addr, ErrHeld})
		if p := time.Duration(-3-v) * time.Millisecond; p > 0 && (out.pttl == 0 || p < out.pttl) {
			out.pttl = p
		}
	}
	l.done(conns)
	if got >= l.quorum {
		if testHookBeforeWriteBack != nil {
			testHookBeforeWriteBack()
		}
		held, wbFails, below := l.raiseFence(ctx, k, counters, fence, nt)
		if held >= l.quorum {
			ls, err := lease.Grant(ctx, lease.Config{
				Key: key, Token: token, Fence: uint64(fence), Start: start,
				ValidUntil: validity.Until(start, o.TTL, l.opts.drift(o.TTL)),
				Options:    o,
				Driver:     newDriver(l, k, key, token, fence, below, o.TTL),
				OnEnd:      func() { l.freeSlot(key) },
				Group:      l.lc.Watchdogs(),
				Drift:      l.opts.drift,
			})
			if err != nil {
				return nil, out, err
			}
			return ls, out, nil
		}
		// The fence is not on a majority: handing it out could let a
		// later holder get a lower one. Give the key up.
		fails, got = append(fails, wbFails...), held
	}
	out.split = got > 0
	if got > 0 || maybe != nil {
		// Unlock now, whether or not ctx ended: the caller leaves no key
		// behind. A node the unlock does not reach gets it again in the
		// background (see retryRelease).
		uctx := context.WithoutCancel(ctx)
		cmd := unlock(0)
		ures := l.fanoutOne(uctx, time.Now().Add(nt), func(i int) []string {
			if counters[i] == 0 && (maybe == nil || !maybe[i]) {
				return nil
			}
			return cmd
		}, nil)
		if missed := unreached(ures); len(missed) > 0 {
			l.retryRelease(missed, cmd, until)
		}
	}
	return nil, out, &QuorumError{Op: "acquire", Key: key, Nodes: fails, Acquired: got, Needed: l.quorum}
}

// Acquire implements distlock.Locker. Calls of one Locker on one key take
// turns locally first (in arrival order; only the first talks to the
// nodes). Each attempt is one multiplexed round trip (see TryAcquire).
// While the key is held, the call queues on the nodes and waits for a
// release to wake it by pub/sub (the Locker opens one subscription per
// node on its first Acquire), for the holder's TTL to run out, or for
// Options.PollInterval (default DefaultPollInterval), whichever comes
// first; while nodes are unavailable, or after a split vote, it waits the
// random retry delay instead. When ctx ends, the error matches
// distlock.ErrNotAcquired and ctx.Err() and keeps the last *QuorumError,
// and the call leaves the queues in the background. Invalid arguments
// return an error matching distlock.ErrInvalidArgument, as TryAcquire;
// Close makes a blocked Acquire return distlock.ErrClosed.
func (l *Locker) Acquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.enter(key, opts)
	if err != nil {
		return nil, err
	}
	defer l.lc.Leave()
	if err := l.checkServers(ctx, o.TTL); err != nil {
		return nil, err
	}
	if err := l.takeSlot(ctx, key); err != nil {
		return nil, err
	}
	l.startSubscribers()
	w := l.newWaiter()
	if w == nil {
		l.freeSlot(key)
		return nil, distlock.ErrClosed
	}
	defer l.removeWaiter(w)
	// The waiter's own timer, armed after each attempt, paces the attempts.
	// The first attempt, and the first after a push wake-up, is
	// TryAcquire's pipelined SET NX + INCR, lighter on the servers than
	// the queueing script. The first attempt goes on to queue when it
	// finds the key held; a woken one backs off instead (see below).
	first := true
	lostWakes := 0 // consecutive push wake-ups that lost the race
	ls, err := retry.Acquire(ctx,
		func(ctx context.Context) (distlock.Lease, error) {
			if l.lc.Closed() {
				return nil, distlock.ErrClosed
			}
			w.mu.Lock()
			byPush := w.byPush
			w.mu.Unlock()
			if first || byPush {
				first = false
				ls, out, err := l.attempt(ctx, key, o, nil)
				if err == nil {
					return ls, nil
				}
				if out.split || !errors.Is(err, distlock.ErrNotAcquired) || errors.Is(err, distlock.ErrUnavailable) || ctx.Err() != nil {
					w.arm(retry.Delay(o.RetryMin, o.RetryMax), !out.split)
					return nil, err
				}
				if byPush {
					// Woken by a release, but another client took the key
					// first (typically the releaser again): back off a
					// random retry delay before queueing again, so that a
					// client re-acquiring at once is not chased by one
					// wasted attempt per release. The delay doubles with
					// each consecutive loss, up to PollInterval/4, so that
					// many waiters on a hot key stay cheap.
					lostWakes++
					d := retry.Delay(o.RetryMin, o.RetryMax) << min(lostWakes-1, 8)
					w.arm(min(d, max(l.opts.PollInterval/4, o.RetryMax)), false)
					return nil, err
				}
			}
			w.mu.Lock()
			w.queued = true
			w.mu.Unlock()
			ls, out, err := l.attempt(ctx, key, o, w)
			if err == nil {
				return ls, nil
			}
			switch {
			case out.split || !errors.Is(err, distlock.ErrNotAcquired) || !l.pushUp():
				w.arm(retry.Delay(o.RetryMin, o.RetryMax), !out.split)
			default:
				d := l.opts.PollInterval
				if out.pttl > 0 {
					d = min(d, out.pttl+time.Millisecond)
				}
				w.arm(max(d, o.RetryMin), true)
			}
			return nil, err
		},
		func(context.Context) (<-chan struct{}, func()) {
			select { // a wake-up from before this attempt is stale
			case <-w.ch:
			default:
			}
			w.mu.Lock()
			w.push, w.pushes = true, 0
			w.byPush, w.pushWoke = w.pushWoke, false
			w.mu.Unlock()
			return w.ch, func() {}
		})
	w.stop()
	if w.queued {
		l.leave(key, w, o.TTL)
	}
	if err != nil {
		l.freeSlot(key) // a granted lease frees it when it ends
	}
	return ls, err
}
