package redlock

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/retry"
)

// waiter is one blocked Acquire call.
type waiter struct {
	id    string // hex, unique in the Locker
	score string // arrival time, µs since the epoch: its rank in every node's queue
	ch    chan struct{}

	mu     sync.Mutex
	push   bool // accept push wake-ups (false during a split-vote back-off)
	pushes int  // wake-up messages since the last attempt
	// pushWoke: a push ended the current wait; byPush: one ended the wait
	// before the current attempt.
	pushWoke, byPush bool
	timer            *time.Timer
	// queued: a queueing attempt was sent, so some node may hold its
	// entry (whether or not a reply said so).
	queued bool
}

func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// pushed counts a wake-up message from one node. Each node whose release
// deleted the key sends one: the waiter wakes when a majority have (the
// key is free on enough nodes for its attempt to succeed), or pushGrace
// after the first if the others do not come (a node that queued another
// waiter first, or is down).
func (w *waiter) pushed(quorum int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.push {
		return
	}
	w.pushes++
	w.pushWoke = true
	switch {
	case w.pushes >= quorum:
		w.wake()
	case w.pushes == 1:
		w.armLocked(pushGrace)
	}
}

// pushGrace is how long a waiter woken by one node waits for the others.
const pushGrace = 2 * time.Millisecond

// arm sets the waiter's timer to d; push says whether a push wake-up may
// end the wait earlier.
func (w *waiter) arm(d time.Duration, push bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.push = push
	w.armLocked(d)
}

func (w *waiter) armLocked(d time.Duration) {
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.wake)
		return
	}
	w.timer.Reset(d)
}

func (w *waiter) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
}

// Acquire implements distlock.Locker. Calls of one Locker on one key take
// turns locally first (in arrival order; only the first talks to the
// nodes, see slot.go). Each attempt is one multiplexed
// round trip (see TryAcquire). While the key is held, the call queues on
// the nodes and waits for a release to wake it by pub/sub (the Locker opens
// one subscription per node on its first Acquire), for the holder's TTL to
// run out, or for Options.PollInterval, whichever comes first; while
// nodes are unavailable, or after a split vote, it waits the random retry
// delay instead. When ctx ends, the error matches distlock.ErrNotAcquired
// and ctx.Err() and keeps the last *QuorumError, and the call leaves the
// queues in the background.
func (l *Locker) Acquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.resolve(key, opts)
	if err != nil {
		return nil, err
	}
	if !l.lc.Enter() {
		return nil, distlock.ErrClosed
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
	ls, err := retry.AcquirePushOnly(ctx,
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

// newWaiter registers a waiter, or returns nil once Close has begun (Close
// wakes only the waiters registered before it).
func (l *Locker) newWaiter() *waiter {
	l.lc.Lock()
	defer l.lc.Unlock()
	if l.lc.ClosedLocked() {
		return nil
	}
	l.nextID++
	w := &waiter{
		id:    strconv.FormatUint(l.nextID, 16),
		score: strconv.FormatInt(time.Now().UnixMicro(), 10),
		ch:    make(chan struct{}, 1),
		push:  true,
	}
	l.waiters[w.id] = w
	return w
}

func (l *Locker) removeWaiter(w *waiter) {
	l.lc.Lock()
	defer l.lc.Unlock()
	delete(l.waiters, w.id)
}

// testHookMessage runs in listen for every wake-up message, with whether
// its waiter is still waiting (nil in production; tests set it).
var testHookMessage atomic.Pointer[func(l *Locker, live bool)]

// pushUp reports whether a majority of the subscriptions are up.
func (l *Locker) pushUp() bool {
	n := 0
	for i := range l.subUp {
		if l.subUp[i].Load() {
			n++
		}
	}
	return n >= l.quorum
}

// startSubscribers starts one subscriber goroutine per node, once.
func (l *Locker) startSubscribers() {
	l.lc.Lock()
	start := !l.subStarted && !l.lc.ClosedLocked()
	l.subStarted = true
	l.lc.Unlock()
	if !start {
		return
	}
	for i := range l.nodes {
		l.lc.Go(func() { l.subscribe(i) })
	}
}

// subscribe keeps node i's subscription to the Locker's channel up until
// Close, reconnecting with back-off.
func (l *Locker) subscribe(i int) {
	nd := l.nodes[i]
	b := retry.Backoff{Min: 50 * time.Millisecond, Max: 2 * time.Second}
	for !l.lc.Closing().Fired() {
		c, err := nd.dial(l.lc.Closing().Context(), time.Now().Add(l.opts.DialTimeout), true)
		if err == nil {
			if l.listen(i, c) {
				b.Reset()
			}
			l.subUp[i].Store(false)
			nd.discard(c)
		}
		if !b.Wait(l.lc.Closing().Done()) {
			return
		}
	}
}

// listen subscribes c and dispatches messages until c fails; it reports
// whether the subscription was confirmed.
func (l *Locker) listen(i int, c *conn) bool {
	if _, err := c.roundTrip(time.Now().Add(l.opts.DialTimeout), []string{"SUBSCRIBE", l.channel}); err != nil {
		return false
	}
	if err := c.nc.SetDeadline(time.Time{}); err != nil {
		return false
	}
	l.subUp[i].Store(true)
	for {
		v, err := readReply(c.br)
		if err != nil {
			return true
		}
		if m, ok := v.([]any); ok && len(m) == 3 && m[0] == "message" {
			payload, _ := m[2].(string)
			id, lock, _ := strings.Cut(payload, "|") // see wakeLoop
			l.lc.Lock()
			w := l.waiters[id]
			l.lc.Unlock()
			if h := testHookMessage.Load(); h != nil {
				(*h)(l, w != nil)
			}
			if w != nil {
				w.pushed(l.quorum)
			} else if lock != "" {
				l.passOn(i, lock, id)
			}
		}
	}
}
