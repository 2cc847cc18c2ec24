// Package pgadvisory is the Postgres backend: a lock is a Postgres
// advisory lock, held by a connection pinned to the lease for its whole
// life (never an arbitrary pooled connection), with pgx v5. The server
// session of that connection is the lock's session: when it ends, the
// server frees every lock it held.
//
// # Keys
//
// A key is any byte string of 1 to distlock.MaxKeyLen (4096) bytes (NUL,
// invalid UTF-8 and path syntax included). It is never sent to the
// server: KeyID hashes Namespace, a NUL byte and the key, bytes as given
// with no case or Unicode normalisation, into the int8 lock id (SHA-256,
// the first 8 bytes; golden values are tested). Distinct keys share an id
// with probability 2^-64 a pair. A Namespace may not hold a NUL byte, so
// that namespaces (tenants) never share an id but by that chance. An
// empty or longer key is refused with distlock.ErrInvalidArgument before
// any request (docs/keys.md).
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
// # Inspection
//
// The Locker is a distlock.Inspector. The server keeps an advisory lock
// as an int8 id and a holding session, nothing more, and Inspect reports
// what pg_locks shows of the key's id in the Locker's database: Held,
// Holder "pid:<pid>" (the holding backend, as pg_stat_activity and
// pg_terminate_backend name it; a pooled session holds successive leases
// under one pid, so it tells apart holders present at once, not
// successive ones) and Waiters, the sessions queued for it. Fence is 0
// (fences come from a sequence shared by all keys), Label is "" (the
// server has no place for it: application_name is per session, ASCII
// and 63 bytes; WithLabel is accepted and not stored), and TTL is 0: the
// lock lives as long as its session, which the server ends a TTL after
// the holder's last heartbeat, by a setting other sessions cannot read.
// Leak reports a lock kept by a prepared transaction (PREPARE TRANSACTION
// after pg_advisory_xact_lock or LockTx), which has no session and never
// expires; its Holder is "prepared:<gid>".
//
// Key names are hashed (KeyID) and not kept on the server, so List names
// each int8 advisory lock held in the database by its decimal id, the
// Key AcquireID gives a lease, whoever took it; InspectID and
// ForceReleaseID take that id. Locker.KeyID maps a name to its id.
//
// ForceRelease terminates the session holding the lock
// (pg_terminate_backend), since Postgres lets only the owning session
// unlock. That frees every lock the session holds and aborts its open
// transaction: a lease of this package holds one lock per session, but
// a LockTx caller or an application session holding other advisory
// locks loses them all. The evicted lease's Done fires as its
// connection closes, and fences stay monotonic. A prepared transaction's
// lock is freed by ROLLBACK PREPARED. The Locker's role needs
// pg_signal_backend (a superuser's session needs a superuser); without
// it ForceRelease fails with an error matching distlock.ErrNotSupported.
//
// # Connections
//
// New takes a *pgx.ConnConfig: TLS and credentials are pgx's, configured
// there (ConnConfig.TLSConfig and Fallbacks, User, Password, as
// pgx.ParseConfig fills them from sslmode, sslrootcert, sslcert, sslkey
// and the URL's userinfo); Options has no TLS fields. A URL passes
// sslmode, sslrootcert, sslcert and sslkey (and every other libpq keyword)
// through to pgx.ParseConfig: sslmode=verify-full with sslrootcert set to
// the CA file checks the server's certificate and that it names the host
// dialled. The shared tls_ parameters of the other backends are refused
// (distlock.ErrInvalidArgument, naming pgx's). pgx's default sslmode is
// prefer: TLS if the server offers it, without verifying the certificate.
//
// Connections are made lazily, by the first acquisition and as the pool
// needs them, so a connection problem is that call's error. A wrong
// password (SQLSTATE 28P01) or a pg_hba.conf line that rejects the user
// matches distlock.ErrAccessDenied ("pgadvisory: authentication failed
// for user ..."); a server certificate the client does not trust or that
// does not name the host ("pgadvisory: server certificate rejected ...:
// x509: ..."), TLS asked of a server with ssl=off, a client certificate
// the server refuses, and a plaintext connection where pg_hba.conf admits
// the user only over TLS (hostssl: "pgadvisory: the server accepts user
// ... only over TLS: TLS settings may not match the server") match
// distlock.ErrTLS. Both match distlock.ErrUnavailable, are one line, and
// end the call at once: Acquire does not retry them until its context
// ends. Errors name the user and database, never the password
// (pgx does not print it, and URL errors are redacted).
//
// # URL
//
// postgres://user:password@host:port/db?params or postgresql://..., the
// pgx DSN plus the lock parameters ttl, autoextend, retry_min, retry_max
// (every backend's), mode (session or transaction), namespace,
// fence_sequence, max_idle, conn_check_interval and request_timeout (see
// Options). Other parameters go to pgx (libpq keywords such as sslmode,
// sslrootcert, sslcert and sslkey, and server settings; see Connections);
// the tls_ parameters are refused.
// Importing the package registers both schemes with distlock.Open.
package pgadvisory
