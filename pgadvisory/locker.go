package pgadvisory

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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

// Close ends this Locker's acquisitions in flight at once: blocked
// Acquire calls and TryAcquire calls return ErrClosed, their connections
// closed (leaving the server's wait queue, freeing any lock a request in
// flight took). It stops the leases' automatic extension, waits for the
// calls in flight, closes the idle connections and waits for the closing
// of connections that acquisitions abandoned when their context ended
// (each bounded by about a second on a server that does not answer).
// Leases still held keep their connections: they can still be extended and released, and
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

// past is a deadline that has passed: setting it on a connection
// interrupts a blocked read.
var past = time.Unix(1, 0)

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
