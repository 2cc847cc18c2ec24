package redissingle

import (
	"fmt"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/lifecycle"
)

// Locker hands out leases on one Redis deployment. It is safe for
// concurrent use.
type Locker struct {
	client   redis.UniversalClient
	owned    bool // opened by URL: Close closes client
	conn     connInfo
	opts     Options
	cluster  bool
	scripts  *scriptSet
	ns       string // Prefix + "distlock:", the namespace of the Locker's own keys
	fenceKey string // ns + "fence", outside Cluster
	channel  string // this Locker's pub/sub channel
	qttl     int64  // wait queue TTL, ms

	serverChecked atomic.Bool // the server's settings passed checkServer, or cannot be read

	// lc is the open/closed state, calls and goroutines in flight and the
	// lease watchdogs; its mutex also protects the fields below.
	lc      lifecycle.Lifecycle
	waiters map[string]*waiter // blocked Acquire calls, by waiter ID
	leaving map[string]leaver  // waiters that gave up, until their clean-up has run (finish)
	// leavingOrder is the IDs added to leaving, oldest first (at most
	// maxLeaving; some may have left leaving already).
	leavingOrder []string
	nextID       uint64
	sub          *subscriber // started by the first Acquire
	subUp        bool        // the subscription is confirmed and unbroken
	subGen       uint64      // incremented at every (re)subscription
}

var _ distlock.Locker = (*Locker)(nil)

// New returns a Locker over client, which the caller keeps owning: Close
// does not close it. opts may be nil for the defaults. Invalid options
// return an error matching distlock.ErrInvalidArgument. New does no I/O:
// the server's eviction settings are checked before the first acquisition
// (see Options.AllowEviction).
func New(client redis.UniversalClient, opts *Options) (*Locker, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: redissingle: nil client", distlock.ErrInvalidArgument)
	}
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	_, cluster := client.(*redis.ClusterClient)
	if o.WaitReplicas > 0 {
		switch client.(type) {
		case *redis.Client, *redis.ClusterClient:
		default:
			return nil, fmt.Errorf("%w: redissingle: WaitReplicas needs a *redis.Client or *redis.ClusterClient, got %T",
				distlock.ErrInvalidArgument, client)
		}
	}
	l := &Locker{
		client:   client,
		conn:     clientConn(client),
		opts:     o,
		cluster:  cluster,
		scripts:  scriptSets[0],
		ns:       o.Prefix + "distlock:",
		fenceKey: o.Prefix + "distlock:fence",
		channel:  o.Prefix + "distlock:w:" + lease.NewToken(),
		qttl:     3 * o.PollInterval.Milliseconds(),
		waiters:  map[string]*waiter{},
		leaving:  map[string]leaver{},
	}
	l.lc.Init()
	if cluster {
		l.scripts = scriptSets[1]
	}
	return l, nil
}

// Guarantees reports what a single Redis promises: exclusion rests on TTLs
// and bounded clock drift; fences are monotonic while the server keeps its
// data (one counter per server, or per hash slot in Cluster) and go back
// after a restart without persistence or a failover to a lagging replica;
// no failure is tolerated. Blocked Acquire calls are woken by the release
// itself and served in the order they queued on the server, with two
// exceptions: a TryAcquire may take a key whose holder expired before the
// first waiter noticed, and a waiter whose pub/sub connection is down when
// the key is handed to it is skipped and queues again at the tail.
func (l *Locker) Guarantees() distlock.Guarantees {
	scope := "server (one counter for all keys; lost on restart without persistence or on failover)"
	if l.cluster {
		scope = "hash slot (one counter per Cluster slot; lost on restart without persistence or on failover)"
	}
	return distlock.Guarantees{
		Backend:          "redis",
		Fence:            distlock.FenceMonotonic,
		FenceScope:       scope,
		FIFO:             true,
		PushWakeup:       true,
		LostNotification: true,
		CrossProcess:     true,
	}
}

// Close wakes this Locker's blocked Acquire calls (they return ErrClosed),
// waits for the calls and requests in flight to return and for the woken
// or cancelled waiters to leave the server's wait queues (each request
// ends with its reply or, at worst, the client's read timeout), stops the
// pub/sub subscription, and closes the client if the Locker was opened by
// URL. Leases still held are not released; they expire after their TTL,
// or can still be released or extended while the client is open. Later
// calls return ErrClosed. Close is idempotent and returns nil.
func (l *Locker) Close() error {
	var sub *subscriber
	l.lc.Close(lifecycle.Hooks{
		WakeLocked: func() {
			for _, w := range l.waiters {
				w.wake()
			}
			sub = l.sub
		},
		Shut: func() {
			if sub != nil {
				sub.close()
			}
		},
		Release: func() {
			if l.owned {
				_ = l.client.Close()
			}
		},
	})
	return nil
}
