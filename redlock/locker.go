package redlock

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/lifecycle"
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
		l.nodes = append(l.nodes, &node{addr: a, l: l, tls: nodeTLS(&o, a), conns: map[*conn]struct{}{}})
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

// Close wakes this Locker's blocked Acquire calls (they return
// distlock.ErrClosed), closes every connection (requests in flight fail
// at once), and waits for every goroutine the Locker started
// (subscribers, clean-ups) to exit. Leases still held are not released;
// they expire after their TTL, and their Release and Extend fail with
// distlock.ErrUnavailable. Later calls return distlock.ErrClosed. Close
// is idempotent and returns nil.
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

// enter checks key (distlock.CheckKey, then checkKey) and resolves opts
// (the error matches distlock.ErrInvalidArgument), then registers the
// call with the lifecycle: every nil error must be matched by
// l.lc.Leave. Once Close has begun it returns distlock.ErrClosed.
func (l *Locker) enter(key string, opts []distlock.Option) (distlock.Options, error) {
	o, err := l.opts.Lock.ResolveFor(key, opts...)
	if err == nil {
		err = l.checkKey(key)
	}
	if err == nil && !l.lc.Enter() {
		err = distlock.ErrClosed
	}
	return o, err
}

// ms renders d in whole milliseconds for PX/PEXPIRE, rounded up, so the
// key lives at least as long as the validity computed from d.
func ms(d time.Duration) string {
	return strconv.FormatInt(max(int64((d+time.Millisecond-1)/time.Millisecond), 1), 10)
}
