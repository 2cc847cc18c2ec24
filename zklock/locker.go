// Package zklock is the ZooKeeper backend: Curator's lock recipe
// (InterProcessMutex) over go-zookeeper, with contexts, TryAcquire,
// session-aware leases that report their loss, and fences that are
// ZooKeeper transaction ids.
//
// Keys: any non-empty byte string of at most MaxKeyLen bytes; each byte
// outside a safe ASCII set is percent-encoded, so every key is one path
// component of its own. A longer key is refused with
// distlock.ErrInvalidArgument before any request.
//
// Recipe: a lock is the parent node Prefix/escape(key) (a container node,
// which the server deletes once its last child is gone, so parents do not
// accumulate); each holder or waiter owns one protected ephemeral
// sequential child, _c_<guid>-lock-<seq>, where the GUID is the lease's
// token. The lowest sequence number holds the key; every other waiter
// watches only the node just before its own, so a release wakes exactly
// one waiter (FIFO, no herd). A create whose reply is lost is found again
// by its GUID and deleted, as is every node of an acquisition that fails,
// is cancelled or gives up (at once, or by the Locker's clean-up goroutine
// once the session is connected again).
//
// Fence: the czxid of the holder's own node, the transaction id of its
// creation: global, durable and strictly increasing across holders, also
// when the parent is deleted and created again (the sequence suffix would
// start over).
//
// Sessions and TTLs: a lock node lives as long as the session that made
// it. With Options.SessionTimeout 0 (the default) every distinct TTL gets
// its own session (one connection) whose timeout is that TTL, opened on
// first use and kept until Close: a holder that dies or is cut off frees
// the key about one TTL later, when the ensemble expires its session.
// Most applications use one TTL and so one session; lockers that share a
// Locker with different TTLs get one session each (at most
// Options.MaxSessions). With Options.SessionTimeout set, every call
// shares one session of that timeout and a lease is additionally bounded
// by it. The ensemble may grant a timeout other than the one asked
// (between its minSessionTimeout and maxSessionTimeout, by default 2 and
// 20 ticks); the Locker reads the negotiated value from the connect reply
// and uses it.
//
// Validity, in Curator's terms: a lost connection suspends the lease and
// an expired session loses it. A lease's ValidUntil is the start of the
// last request that confirmed the node through the leader (the
// acquisition's create or a sync, followed by the listing; each
// extension's sync, followed by a read of the node) plus the least of the
// TTL, SafeFraction x negotiated timeout, and 2/3 x negotiated timeout -
// TickTime/2 - drift: the ensemble cannot expire the session before that.
// The leader expires a session a timeout after the last activity it was
// told of; a server relays activity on its next tick and the client pings
// every third of the timeout, so the last activity the leader knows of can
// be a third of the timeout and half a tick older than that request
// (Options.TickTime must be at least the ensemble's tickTime). A read alone would not do: a follower cut off from
// the leader answers reads from its own copy for up to syncLimit ticks
// while the leader expires the session. Extensions (Extend, or the
// watchdog of WithAutoExtend every third of that) fail while disconnected
// or while the server cannot reach the leader, and the lease runs out on
// its own, before the session can expire. Done fires when the validity runs out, when the
// node's deletion is seen (a watch on the own node: an operator deleting
// it revokes the lease), or when the session is known or presumed expired
// (no byte from any server for a whole session timeout). A lease that runs
// out without extension has its node deleted, so the key is free after the
// TTL as on every backend, although the session lives on.
//
// A blocked Acquire whose session ends while it waits in the queue
// returns a *SessionError (distlock.ErrUnavailable) at once rather than
// waiting on; connection errors before it queued are retried.
//
// URL: zk://host1:2181,host2:2181,host3:2181[/prefix][?params]. Parameters:
// ttl, autoextend, retry_min, retry_max (every backend's), session_timeout,
// safe_fraction, tick_time, connect_timeout and max_sessions (see
// Options). Unknown parameters are rejected.
package zklock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lifecycle"
	"github.com/distlock/distlock/internal/retry"
)

// Locker hands out leases over a ZooKeeper ensemble. It is safe for
// concurrent use.
type Locker struct {
	servers []string
	opts    Options

	// lc is the open/closed state; its Lock also guards the fields below,
	// so that no session is opened once Close has collected them.
	lc       lifecycle.Lifecycle
	sessions map[time.Duration]*session
	leases   map[distlock.Lease]*driver // granted and not released, for Multi
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
// jump neither ends nor prolongs a lease (ServerClockSafety, S20, S21).
func (l *Locker) Guarantees() distlock.Guarantees {
	return distlock.Guarantees{
		Backend:           "zookeeper",
		ServerClockSafety: true, // sessions are timed on the servers' monotonic clock (S20, S21)
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
		l.lc.Lock()
		sessions := make([]*session, 0, len(l.sessions))
		for _, s := range l.sessions {
			sessions = append(sessions, s)
		}
		l.lc.Unlock()
		for _, s := range sessions {
			s.close()
		}
	}})
	return nil
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

// begin checks the arguments and the Locker, and returns the session.
func (l *Locker) begin(key string, opts []distlock.Option) (*session, distlock.Options, error) {
	o, err := l.opts.Lock.ResolveFor(key, opts...)
	if err != nil {
		return nil, o, err
	}
	if err := checkKey(key); err != nil {
		return nil, o, err
	}
	s, err := l.session(o.TTL)
	return s, o, err
}

// TryAcquire implements distlock.Locker: create the node, list the queue,
// and delete the node again unless it is first (three requests when held
// by someone else, two and a read of the own node when free; the create
// goes through the leader, so the listing needs no sync). It waits for
// a session at most Options.ConnectTimeout when ctx has no deadline. When
// ctx ends first, the error matches distlock.ErrNotAcquired, ctx.Err() and
// context.Cause(ctx). An empty key or one longer than MaxKeyLen returns an error matching
// distlock.ErrInvalidArgument.
func (l *Locker) TryAcquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	s, o, err := l.begin(key, opts)
	if err != nil {
		return nil, err
	}
	if !l.lc.Enter() {
		return nil, distlock.ErrClosed
	}
	defer l.lc.Leave()
	if ctx.Err() != nil {
		return nil, notAcquired(ctx, nil, nil)
	}
	ls, err := l.acquireOnce(ctx, s, key, o, false)
	if err != nil && ctx.Err() != nil {
		err = notAcquired(ctx, err, nil)
	}
	return ls, err
}

// Acquire implements distlock.Locker: it queues and waits for its turn,
// woken by the deletion of the node before its own. Errors before the
// node is queued (no session, connection lost) are retried after a random
// delay in [RetryMin, RetryMax] once a session is up; a *SessionError (the
// session ended while queued) and ErrClosed are returned at once. When ctx
// ends, the error matches distlock.ErrNotAcquired, ctx.Err() and, for a
// context given a cause (context.WithCancelCause, WithTimeoutCause),
// context.Cause(ctx), and keeps the last backend error. An empty
// key or one longer than MaxKeyLen returns an error matching
// distlock.ErrInvalidArgument.
func (l *Locker) Acquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	s, o, err := l.begin(key, opts)
	if err != nil {
		return nil, err
	}
	if !l.lc.Enter() {
		return nil, distlock.ErrClosed
	}
	defer l.lc.Leave()
	var last error
	for {
		if ctx.Err() != nil {
			return nil, notAcquired(ctx, nil, last)
		}
		ls, err := l.acquireOnce(ctx, s, key, o, true)
		var se *SessionError
		switch {
		case err == nil:
			return ls, nil
		case ctx.Err() != nil:
			return nil, notAcquired(ctx, err, last)
		case errors.As(err, &se), !errors.Is(err, distlock.ErrUnavailable):
			return nil, err
		}
		last = err
		if retry.Wait(ctx, retry.Delay(o.RetryMin, o.RetryMax), l.lc.Closing().Done()) != nil {
			return nil, notAcquired(ctx, nil, last)
		}
	}
}
