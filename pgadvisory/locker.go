// Package pgadvisory is the Postgres backend: a lock is a Postgres
// advisory lock, held by a connection pinned to the lease for its whole
// life (never an arbitrary pooled connection), with pgx v5.
//
// Acquire waits on the server (pg_advisory_lock), so a release hands the
// lock to the next waiter in about one round trip and waiters are served
// in arrival order; TryAcquire makes one pg_try_advisory_lock. The fence
// comes from a sequence (nextval) in the same statement as the lock: one
// round trip per acquisition, strictly increasing across holders and
// durable across server restarts.
//
// The TTL is enforced by the server: each lease sets its session's
// idle_session_timeout to the TTL, so a holder that stops heartbeating
// (paused, partitioned) loses its session and its lock a TTL after the
// server last heard from it. It also sets the session's TCP timeouts
// (tcp_user_timeout, tcp_keepalives_idle) from the TTL, so that the
// server's TCP stack does not end a partitioned holder's session, and free
// its lock, before its validity has passed (see timeouts.go).
// With WithAutoExtend the lease's watchdog heartbeats every TTL/3.
// ValidUntil is the last confirmed heartbeat plus the TTL minus a drift
// margin, and Done closes as soon as the server ends the session, the
// connection drops, a heartbeat fails or the validity passes (then the
// connection is closed, freeing the lock at once).
//
// Keys are strings hashed into the int8 advisory key space with a
// namespace (KeyID), or integers given directly (AcquireID). Behind a
// transaction-pooling proxy (PgBouncer) session locks break; a
// session-mode Locker detects the proxy and refuses (*PoolerError), and
// ModeTransaction (or LockTx in the caller's own transaction) holds
// transaction-scoped locks that work through it.
//
// URL: postgres://user:password@host:port/db?params or postgresql://...,
// the pgx DSN plus the lock parameters ttl, autoextend, retry_min,
// retry_max (every backend's), mode (session or transaction), namespace,
// fence_sequence, max_idle, conn_check_interval and request_timeout (see
// Options). Other
// parameters go to pgx (libpq keywords, server settings).
package pgadvisory

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lifecycle"
	"github.com/distlock/distlock/internal/stop"
)

// Locker hands out leases on one Postgres server. It is safe for
// concurrent use. Each held lease and each waiting Acquire uses one
// connection of its own; idle ones are kept for reuse (Options.MaxIdle).
type Locker struct {
	opts Options
	sql  *statements
	pool *pool

	fenceMu    sync.Mutex
	fenceReady atomic.Bool

	// lc is the closed flag, the calls in flight and the leases'
	// watchdogs; its mutex also guards waiting.
	lc      lifecycle.Lifecycle
	waiting map[*conn]struct{} // connections of blocked Acquire calls
	// abort is fired by Close as it begins, with the closed flag: it ends
	// the requests of acquisitions in flight at once (callContext), before
	// Close waits for a heartbeat in flight (see Close).
	abort   *stop.Signal
	starter starter // starts the leases' monitors (see starter.go)
}

var _ distlock.Locker = (*Locker)(nil)

// New returns a Locker that opens its connections with cfg (see
// pgx.ParseConfig; it is copied). opts may be nil for the defaults.
// Invalid options return an error matching distlock.ErrInvalidArgument.
// New does no I/O: the first acquisition connects and, if needed, creates
// the fence sequence.
func New(cfg *pgx.ConnConfig, opts *Options) (*Locker, error) {
	if cfg == nil {
		return nil, fmt.Errorf("%w: pgadvisory: nil connection config", distlock.ErrInvalidArgument)
	}
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	cfg = cfg.Copy()
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	for k, v := range map[string]string{"application_name": "distlock", "client_encoding": "UTF8"} {
		if cfg.RuntimeParams[k] == "" {
			cfg.RuntimeParams[k] = v
		}
	}
	if o.Mode == ModeTransaction && cfg.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement {
		// Prepared statements do not survive a transaction pooler's
		// switching of server connections.
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	l := &Locker{
		opts:    o,
		sql:     newStatements(o.FenceSequence, o.ConnCheckInterval),
		pool:    newPool(cfg, o),
		abort:   stop.New(),
		waiting: map[*conn]struct{}{},
	}
	l.lc.Init()
	return l, nil
}

// Guarantees reports what Postgres advisory locks promise here: exclusion
// rests on the TTL the server enforces (a holder paused past it loses the
// lock while it sleeps), fences are durable (a sequence), the lock is
// freed as soon as the holder's connection closes, waiters are served by
// the server in arrival order and woken by the release itself, and a
// waiter whose session ends gets an error. One server: no failure is
// tolerated, and a restart ends every session (the holders are told).
// In transaction mode a fence drawn by a transaction that a server crash
// rolled back can be drawn again, so fences are only monotonic.
func (l *Locker) Guarantees() distlock.Guarantees {
	g := distlock.Guarantees{
		Backend:          "postgres",
		Fence:            distlock.FenceDurable,
		FenceScope:       "server (one sequence, " + l.opts.FenceSequence + ", for all keys)",
		FIFO:             true,
		PushWakeup:       true,
		LostNotification: true,
		ReleasedOnCrash:  true,
		WaiterSessions:   true,
		CrossProcess:     true,
	}
	if l.opts.Mode == ModeTransaction {
		g.Fence = distlock.FenceMonotonic
		g.FenceScope += "; not durable across a crash while held"
	}
	return g
}

// KeyID returns the advisory lock ID of key under this Locker's namespace
// (see the package function KeyID).
func (l *Locker) KeyID(key string) int64 { return KeyID(l.opts.Namespace, key) }

// Acquire implements distlock.Locker: it waits on the server until the
// key is granted (pg_advisory_lock), so the release hands it over without
// polling. While the server cannot be reached it retries at the retry
// delay. When ctx ends, the error matches distlock.ErrNotAcquired and
// ctx.Err(); the connection is then closed, so a grant that raced the
// cancellation is freed with it. If the server ends the waiting session
// (terminated, restarted), the error matches distlock.ErrUnavailable; so
// it does if the waiter is cut off from the server: every TTL/3 of
// waiting it checks on another connection that the server still answers
// within TTL/2 (a partition can keep the waiting connection up while
// nothing reaches it). A full lock table gives a *LockTableFullError at
// once.
func (l *Locker) Acquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.opts.Lock.ResolveFor(key, opts...)
	if err != nil {
		return nil, err
	}
	return l.acquire(ctx, key, KeyID(l.opts.Namespace, key), o, true)
}

// TryAcquire implements distlock.Locker: one pg_try_advisory_lock with the
// fence, one round trip. If no reply comes within Options.RequestTimeout
// or ctx ends in flight, the error matches distlock.ErrUnavailable and
// the connection is closed, which frees the lock if the attempt took it.
func (l *Locker) TryAcquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.opts.Lock.ResolveFor(key, opts...)
	if err != nil {
		return nil, err
	}
	if err := ended(ctx, nil); err != nil {
		return nil, err
	}
	return l.acquire(ctx, key, KeyID(l.opts.Namespace, key), o, false)
}

// AcquireID is Acquire on the integer advisory lock id itself, as
// pg_advisory_lock(id) takes it: no namespace, so it excludes (and is
// excluded by) an application's own pg_advisory_lock(id). The lease's Key
// is the decimal id.
func (l *Locker) AcquireID(ctx context.Context, id int64, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.opts.Lock.Resolve(opts...)
	if err != nil {
		return nil, err
	}
	return l.acquire(ctx, strconv.FormatInt(id, 10), id, o, true)
}

// TryAcquireID is TryAcquire on the integer advisory lock id (see
// AcquireID).
func (l *Locker) TryAcquireID(ctx context.Context, id int64, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.opts.Lock.Resolve(opts...)
	if err != nil {
		return nil, err
	}
	if err := ended(ctx, nil); err != nil {
		return nil, err
	}
	return l.acquire(ctx, strconv.FormatInt(id, 10), id, o, false)
}

// Close ends this Locker's acquisitions in flight at once: blocked
// Acquire calls and TryAcquire calls return ErrClosed, their connections
// closed (leaving the server's wait queue, freeing any lock a request in
// flight took). It stops the leases' automatic extension, waits for the
// calls in flight, and closes the idle connections. Leases still held
// keep their connections: they can still be extended and released, and
// otherwise expire after their TTL (the server ends their sessions). A
// heartbeat of automatic extension in flight is not interrupted, since
// that would close its connection and free the lock: Close waits for its
// reply, at most Options.RequestTimeout.
// Later calls return ErrClosed. Close is idempotent and returns nil.
//
// The acquisitions' requests end as Close begins, not after the
// watchdogs have stopped: a heartbeat in flight can hold the watchdogs'
// stop for up to Options.RequestTimeout, and a TryAcquire must not be
// granted meanwhile.
func (l *Locker) Close() error {
	l.lc.Close(lifecycle.Hooks{
		WakeLocked: func() {
			for c := range l.waiting {
				_ = c.PgConn().Conn().SetDeadline(past)
			}
			l.abort.Fire()
		},
		Release: l.pool.close,
	})
	return nil
}

// track records the connection of a blocked Acquire so Close can
// interrupt it; false if the Locker is closed.
func (l *Locker) track(c *conn) bool {
	l.lc.Lock()
	defer l.lc.Unlock()
	if l.lc.ClosedLocked() {
		return false
	}
	l.waiting[c] = struct{}{}
	return true
}

// untrack forgets c and reports whether the Locker was closed meanwhile.
func (l *Locker) untrack(c *conn) bool {
	l.lc.Lock()
	defer l.lc.Unlock()
	delete(l.waiting, c)
	return l.lc.ClosedLocked()
}
