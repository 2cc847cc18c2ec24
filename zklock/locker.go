package zklock

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lifecycle"
)

// Locker hands out leases over a ZooKeeper ensemble. It is safe for
// concurrent use.
type Locker struct {
	servers []string
	opts    Options
	// needAuth: a server refused a request for want of authentication
	// (see refused); the connection losses that follow are reported so,
	// until a request succeeds.
	needAuth atomic.Bool

	// lc is the open/closed state; its Lock also guards the fields below,
	// so that no session is opened once Close has collected them.
	lc       lifecycle.Lifecycle
	sessions map[time.Duration]*session
	leases   map[distlock.Lease]*driver // granted and not released, for MultiIfHeld
	tasks    []*task                    // the janitor's queue
	janitor  bool                       // its goroutine runs
	wake     chan struct{}
}

var _ distlock.Locker = (*Locker)(nil)

// New returns a Locker over the ensemble at servers ("host:port"; a
// missing port is 2181). opts may be nil for the defaults. Invalid
// arguments return an error matching distlock.ErrInvalidArgument. New does
// no I/O: sessions are opened on first use.
func New(servers []string, opts *Options) (*Locker, error) {
	if len(servers) == 0 {
		return nil, fmt.Errorf("%w: zklock: no server addresses", distlock.ErrInvalidArgument)
	}
	seen := map[string]bool{}
	for _, s := range servers {
		if s == "" || seen[s] {
			return nil, fmt.Errorf("%w: zklock: empty or duplicate server address %q", distlock.ErrInvalidArgument, s)
		}
		seen[s] = true
	}
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	l := &Locker{
		servers:  append([]string(nil), servers...),
		opts:     o,
		sessions: map[time.Duration]*session{},
		leases:   map[distlock.Lease]*driver{},
		wake:     make(chan struct{}, 1),
	}
	l.lc.Init()
	return l, nil
}

// Guarantees reports what the ZooKeeper recipe promises: fences are
// transaction ids (FenceDurable, cluster scope); a minority of the
// ensemble may fail, failover and restarts keep the lock (ZAB, a durable
// transaction log); waiters are served in order and woken by the release
// itself; Done fires on a deletion, an expiry or a lost connection before
// the ensemble can hand the key on; a dead holder's key is freed only when
// its session expires (ReleasedOnCrash false); a waiter's queue entry
// dies with its session (WaiterSessions). Mutual exclusion rests on the
// holder noticing its session's end within the session timeout: a client
// paused longer can overlap the next holder (ClockIndependentSafety
// false), as with every session or TTL lock; check the fence. The
// servers time sessions on their monotonic clock, so a server's wall-clock
// jump neither ends nor prolongs a lease (ServerClockSafety; scenarios
// S20 and S21 of docs/conformance.md).
func (l *Locker) Guarantees() distlock.Guarantees {
	return distlock.Guarantees{
		Backend:           "zookeeper",
		ServerClockSafety: true, // sessions are timed on the servers' monotonic clock
		Fence:             distlock.FenceDurable,
		FenceScope:        "cluster: the czxid (creation transaction id) of the holder's lock node",
		ToleratedFailures: (len(l.servers) - 1) / 2,
		FailoverSafe:      true,
		SurvivesRestart:   true,
		FIFO:              true,
		PushWakeup:        true,
		LostNotification:  true,
		WaiterSessions:    true,
		CrossProcess:      true,
	}
}

// Close wakes this Locker's blocked Acquire calls (they return
// distlock.ErrClosed), closes its sessions (the ensemble deletes their
// nodes at once, so held leases are lost: Done fires and Err matches
// distlock.ErrLeaseLost and distlock.ErrClosed), and waits for every
// goroutine the Locker and go-zookeeper started to exit. Later calls
// return distlock.ErrClosed. Close is idempotent and returns nil.
func (l *Locker) Close() error {
	l.lc.Close(lifecycle.Hooks{Shut: func() {
		for _, s := range l.openSessions() {
			s.close()
		}
	}})
	return nil
}

// openSessions returns the sessions opened so far.
func (l *Locker) openSessions() []*session {
	l.lc.Lock()
	defer l.lc.Unlock()
	sessions := make([]*session, 0, len(l.sessions))
	for _, s := range l.sessions {
		sessions = append(sessions, s)
	}
	return sessions
}

// session returns the session for a TTL, opening it on first use.
func (l *Locker) session(ttl time.Duration) (*session, error) {
	timeout := l.opts.SessionTimeout
	if timeout == 0 {
		timeout = ttl
	}
	l.lc.Lock()
	defer l.lc.Unlock()
	if l.lc.ClosedLocked() {
		return nil, distlock.ErrClosed
	}
	if s := l.sessions[timeout]; s != nil {
		return s, nil
	}
	if len(l.sessions) >= l.opts.MaxSessions {
		return nil, fmt.Errorf("%w: zklock: TTL %v needs a session of its own and the Locker has %d (MaxSessions); use fewer distinct TTLs or set Options.SessionTimeout",
			distlock.ErrInvalidArgument, ttl, len(l.sessions))
	}
	s, err := newSession(l, timeout)
	if err != nil {
		return nil, err
	}
	l.sessions[timeout] = s
	return s, nil
}

// Path returns the ZooKeeper path of key's lock: the parent node whose
// children are the holder's and the waiters' nodes (the lowest sequence
// number holds). An operator revokes the lock by deleting the holder's
// child; a Curator InterProcessMutex on this path contends with the
// Locker. It does no I/O.
func (l *Locker) Path(key string) string { return l.opts.Prefix + "/" + escape(key) }

func (l *Locker) register(ls distlock.Lease, d *driver) {
	l.lc.Lock()
	defer l.lc.Unlock()
	l.leases[ls] = d
}

func (l *Locker) unregister(ls distlock.Lease) {
	if ls == nil {
		return
	}
	l.lc.Lock()
	defer l.lc.Unlock()
	delete(l.leases, ls)
}
