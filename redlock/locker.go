package redlock

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/lifecycle"
	"github.com/distlock/distlock/internal/retry"
	"github.com/distlock/distlock/internal/validity"
)

// Locker hands out leases over N Redis masters. It is safe for concurrent
// use.
type Locker struct {
	nodes    []*node
	quorum   int
	opts     Options
	channel  string // this Locker's pub/sub channel
	fenceKey string

	// lc is the closed flag, the calls and goroutines in flight
	// (subscribers, clean-ups), the closing signal and the watchdogs. Its
	// mutex also guards the fields below up to subUp.
	lc lifecycle.Lifecycle

	waiters    map[string]*waiter         // blocked Acquire calls, by ID
	slots      map[string][]chan struct{} // see slot.go
	nextID     uint64
	subStarted bool
	subUp      []atomic.Bool // node i's subscription is confirmed and unbroken
}

var _ distlock.Locker = (*Locker)(nil)

// New returns a Locker over the Redis masters at addrs ("host:port"), which
// must be independent (not replicas of each other) and distinct. opts may
// be nil for the defaults. Invalid arguments return an error matching
// distlock.ErrInvalidArgument. New does no I/O: connections are made on
// first use.
func New(addrs []string, opts *Options) (*Locker, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: redlock: no node addresses", distlock.ErrInvalidArgument)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if a == "" || seen[a] {
			return nil, fmt.Errorf("%w: redlock: empty or duplicate node address %q", distlock.ErrInvalidArgument, a)
		}
		seen[a] = true
	}
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	l := &Locker{
		quorum:   len(addrs)/2 + 1,
		opts:     o,
		channel:  o.Prefix + reserved + "w:" + lease.NewToken(),
		fenceKey: o.Prefix + reserved + "fence",
		waiters:  map[string]*waiter{},
		slots:    map[string][]chan struct{}{},
		subUp:    make([]atomic.Bool, len(addrs)),
	}
	l.lc.Init()
	for _, a := range addrs {
		l.nodes = append(l.nodes, &node{addr: a, l: l, conns: map[*conn]struct{}{}})
	}
	return l, nil
}

// Guarantees reports what Redlock promises: exclusion rests on TTLs,
// bounded clock drift and bounded pauses (ClockIndependentSafety false);
// fences increase while no node of a majority loses its counter
// (FenceMonotonic, scope "quorum", which names what the nodes need: every
// write fsynced to the append-only file, and no eviction; see Operating
// requirements in the package documentation); (N-1)/2 nodes may be down; there are no
// replicas to fail over to (FailoverSafe false: do not put replicas behind
// the addresses); a node restarted without its data can grant the key a
// second time (SurvivesRestart false, whatever the persistence, which the
// Locker cannot check: see the package documentation); a release wakes
// one waiter by pub/sub (PushWakeup); Done fires at the local, drift
// adjusted deadline (LostNotification); not FIFO (a woken waiter can lose
// to a newcomer, and a split vote is resolved by random delays).
func (l *Locker) Guarantees() distlock.Guarantees {
	return distlock.Guarantees{
		Backend:           "redlock",
		Fence:             distlock.FenceMonotonic,
		FenceScope:        "quorum: holds while no node of the majority loses its counter (needs appendfsync always and maxmemory-policy noeviction)",
		ToleratedFailures: (len(l.nodes) - 1) / 2,
		PushWakeup:        true,
		LostNotification:  true,
		CrossProcess:      true,
	}
}

// Close wakes this Locker's blocked Acquire calls (they return ErrClosed),
// closes every connection (requests in flight fail at once), and waits for
// every goroutine the Locker started (subscribers, clean-ups) to exit.
// Leases still held are not released; they expire after their TTL, and
// their Release and Extend fail with distlock.ErrUnavailable. Later calls
// return ErrClosed. Close is idempotent and returns nil.
func (l *Locker) Close() error {
	l.lc.Close(lifecycle.Hooks{
		WakeLocked: func() {
			for _, w := range l.waiters {
				w.wake()
			}
		},
		Shut: func() {
			for _, n := range l.nodes {
				n.close()
			}
		},
	})
	return nil
}

// resolve checks key (distlock.CheckKey, then checkKey) and resolves
// opts; the error matches distlock.ErrInvalidArgument.
func (l *Locker) resolve(key string, opts []distlock.Option) (distlock.Options, error) {
	o, err := l.opts.Lock.ResolveFor(key, opts...)
	if err == nil {
		err = l.checkKey(key)
	}
	return o, err
}

// ms renders d in whole milliseconds for PX/PEXPIRE, rounded up, so the
// key lives at least as long as the validity computed from d.
func ms(d time.Duration) string {
	return strconv.FormatInt(max(int64((d+time.Millisecond-1)/time.Millisecond), 1), 10)
}

// TryAcquire implements distlock.Locker: one multiplexed round trip to
// every node, and a second to the granting nodes whose fence counter is
// below the lease's fence (see raiseFence). On failure the error is a *QuorumError naming each node's
// answer: it matches distlock.ErrNotAcquired for contention and
// distlock.ErrUnavailable for outages (see QuorumError). If another call
// of this Locker holds or is acquiring key, it fails at once, without I/O,
// with an error matching distlock.ErrNotAcquired (see slot.go).
func (l *Locker) TryAcquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.resolve(key, opts)
	if err != nil {
		return nil, err
	}
	if !l.lc.Enter() {
		return nil, distlock.ErrClosed
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
