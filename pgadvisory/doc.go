// Package pgadvisory is the Postgres backend: a lock is a Postgres
// advisory lock, held by a connection pinned to the lease for its whole
// life (never an arbitrary pooled connection), with pgx v5. The server
// session of that connection is the lock's session: when it ends, the
// server frees every lock it held.
//
// # Acquire
//
// Acquire waits on the server (pg_advisory_lock), so a release hands the
// lock to the next waiter in about one round trip and waiters are served
// in arrival order; TryAcquire makes one pg_try_advisory_lock. While the
// server cannot be reached, a blocking Acquire retries at the retry delay.
// Keys are strings hashed into the int8 advisory key space with a
// namespace (KeyID), or integers given directly (AcquireID).
//
// The TTL is enforced by the server: each lease sets its session's
// idle_session_timeout to the TTL, so a holder that stops heartbeating
// (paused, partitioned) loses its session and its lock a TTL after the
// server last heard from it. It also sets the session's TCP timeouts
// (tcp_user_timeout, tcp_keepalives_idle) from the TTL, so that the
// server's TCP stack does not end a partitioned holder's session, and free
// its lock, before its validity has passed (see MaxTTL). With
// WithAutoExtend the lease's watchdog heartbeats every TTL/3. ValidUntil
// is the last confirmed heartbeat plus the TTL minus a drift margin.
//
// # Fencing
//
// The fence comes from a sequence (nextval) in the same statement as the
// lock: one round trip per acquisition, strictly increasing across
// holders and durable across server restarts (Options.FenceSequence; in
// ModeTransaction only monotonic, see Locker.Guarantees). FencingDB adapts
// a pgx connection to fencing.SQLDB, so that a fencing.SQLGuard on a
// Postgres table refuses writes with an older fence.
//
// # Failures
//
// Done closes as soon as the server ends the session, the connection
// drops, a heartbeat fails or the validity passes (then the connection is
// closed, freeing the lock at once). Every request to the server is
// bounded by Options.RequestTimeout; a request whose outcome is unknown
// closes its connection, so the server frees anything it may have locked,
// and its error matches distlock.ErrUnavailable. A waiting Acquire whose
// session ends, or that is cut off from the server, returns an error
// matching distlock.ErrUnavailable.
//
// Behind a transaction-pooling proxy (PgBouncer) session locks break; a
// session-mode Locker detects the proxy and refuses (*PoolerError), and
// ModeTransaction (or LockTx in the caller's own transaction) holds
// transaction-scoped locks that work through it. A full server lock
// table gives a *LockTableFullError; a fence sequence that cannot be
// created or gives no increasing fences, a *FenceSetupError or a
// *FenceSequenceError.
//
// # URL
//
// postgres://user:password@host:port/db?params or postgresql://..., the
// pgx DSN plus the lock parameters ttl, autoextend, retry_min, retry_max
// (every backend's), mode (session or transaction), namespace,
// fence_sequence, max_idle, conn_check_interval and request_timeout (see
// Options). Other parameters go to pgx (libpq keywords, server settings).
// Importing the package registers both schemes with distlock.Open.
package pgadvisory
