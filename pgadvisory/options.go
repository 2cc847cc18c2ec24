package pgadvisory

import (
	"fmt"
	"strings"
	"time"

	"github.com/distlock/distlock"
)

// Mode says how a lease holds its advisory lock.
type Mode int

const (
	// ModeSession (the default) holds a session-level lock
	// (pg_advisory_lock) on a connection pinned to the lease for its whole
	// life. The server frees it when the connection closes, when the
	// holder stops heartbeating for a TTL (idle_session_timeout), or on
	// Release. It needs a direct connection: behind a transaction-pooling
	// proxy the Locker refuses to lock (*PoolerError).
	ModeSession Mode = iota

	// ModeTransaction holds a transaction-level lock
	// (pg_advisory_xact_lock) inside a transaction the lease keeps open on
	// its pinned connection; Release commits it. It works through
	// PgBouncer in transaction pooling mode, which keeps one server
	// connection for a transaction. The TTL is enforced by
	// idle_in_transaction_session_timeout, with the TCP timeouts set from
	// it for the transaction as in ModeSession. Behind a pooler those
	// reach the pooler's server connection, not the client's: the
	// pooler's own client-side timeouts (keepalive, TCP user timeout) must
	// not end a silent client's transaction within the TTL. Its fences
	// are not durable across a server crash while held (see Guarantees).
	ModeTransaction
)

// String returns "session" or "transaction".
func (m Mode) String() string {
	if m == ModeTransaction {
		return "transaction"
	}
	return "session"
}

// ParseMode parses "session" or "transaction" (also "xact"), in any case;
// "" is ModeSession. Anything else gives an error matching
// distlock.ErrInvalidArgument.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(s) {
	case "", "session":
		return ModeSession, nil
	case "transaction", "xact":
		return ModeTransaction, nil
	}
	return 0, fmt.Errorf("%w: pgadvisory: mode %q: want session or transaction", distlock.ErrInvalidArgument, s)
}

// Defaults of Options.
const (
	// DefaultNamespace is mixed into every string key's hash (see KeyID),
	// so the Locker's locks live apart from an application's own.
	DefaultNamespace = "distlock"

	// DefaultFenceSequence is the sequence fences are drawn from.
	DefaultFenceSequence = "distlock_fence"

	// DefaultMaxIdle is how many idle connections a Locker keeps for
	// reuse.
	DefaultMaxIdle = 16

	// DefaultConnCheckInterval is the server's client_connection_check_interval
	// on the Locker's connections: how often a waiting session checks that
	// its client is still connected, so an abandoned waiter leaves the
	// queue within about this long.
	DefaultConnCheckInterval = time.Second

	// DefaultRequestTimeout bounds each request to the server when
	// Options.RequestTimeout is 0.
	DefaultRequestTimeout = 5 * time.Second
)

// Options configure a Locker. The zero value (or a nil *Options) gives the
// defaults documented on each field.
type Options struct {
	// Lock holds the default per-call options (TTL, auto-extension, retry
	// delay), which the With* options of each call override. Zero fields
	// take the values of distlock.DefaultOptions: TTL 30 s, no
	// auto-extension, max hold 1 h, retry delay 5-50 ms. A TTL above
	// MaxTTL is refused, by Acquire and by Extend. The retry delay
	// paces a blocking Acquire only while the server cannot be reached;
	// otherwise it waits on the server.
	Lock distlock.Options

	// Mode selects session-level (default) or transaction-level locks.
	Mode Mode

	// Namespace is hashed with every string key (KeyID), so that the
	// library's locks do not collide with the application's own advisory
	// locks or with another namespace's. Default DefaultNamespace. A
	// namespace with a NUL byte is refused (distlock.ErrInvalidArgument).
	// Integer keys (AcquireID) ignore it.
	Namespace string

	// FenceSequence names the sequence fences come from, optionally
	// schema-qualified ("locks.fence"). Default DefaultFenceSequence,
	// resolved through the search_path. The first acquisition creates it
	// (CREATE SEQUENCE IF NOT EXISTS) if it is missing; if the user may
	// not create it, acquisitions fail with a *FenceSetupError naming the
	// statements a DBA must run. An existing one must give increasing
	// fences (INCREMENT BY and MINVALUE at least 1, NO CYCLE, CACHE 1);
	// otherwise acquisitions fail with a *FenceSequenceError naming the
	// fix.
	FenceSequence string

	// MaxIdle is how many idle connections are kept for reuse. Default
	// DefaultMaxIdle; negative keeps none.
	MaxIdle int

	// ConnCheckInterval sets the server's client_connection_check_interval
	// on session-mode connections. Default DefaultConnCheckInterval;
	// negative leaves the server's setting.
	ConnCheckInterval time.Duration

	// RequestTimeout bounds each request to the server when the call's
	// context has no earlier deadline: connecting (with the connection's
	// set-up), TryAcquire's lock statement, the fence set-up, Extend's
	// heartbeat and Release's unlock. A request it ends fails with an
	// error matching distlock.ErrUnavailable, its connection closed (so
	// the server frees anything it may hold; closing a connection left in
	// doubt takes up to 2 s more): a heartbeat so ended loses the lease
	// (distlock.ErrLeaseLost too). A blocking Acquire's wait on the
	// server is not bounded by it. Default DefaultRequestTimeout; it must
	// be at least 1 ms.
	RequestTimeout time.Duration
}

// resolve returns o with defaults applied, or an error matching
// distlock.ErrInvalidArgument.
func (o *Options) resolve() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	r.Lock = r.Lock.WithDefaults()
	if err := r.Lock.Validate(); err != nil {
		return Options{}, err
	}
	if r.Namespace == "" {
		r.Namespace = DefaultNamespace
	}
	if err := checkNamespace(r.Namespace); err != nil {
		return Options{}, err
	}
	if r.FenceSequence == "" {
		r.FenceSequence = DefaultFenceSequence
	}
	if r.MaxIdle == 0 {
		r.MaxIdle = DefaultMaxIdle
	}
	if r.ConnCheckInterval == 0 {
		r.ConnCheckInterval = DefaultConnCheckInterval
	}
	if r.RequestTimeout == 0 {
		r.RequestTimeout = DefaultRequestTimeout
	}
	switch {
	case r.RequestTimeout < time.Millisecond:
		return Options{}, fmt.Errorf("%w: pgadvisory: request timeout %v: want at least 1ms (0 for the default, %v)", distlock.ErrInvalidArgument, r.RequestTimeout, DefaultRequestTimeout)
	case r.Mode != ModeSession && r.Mode != ModeTransaction:
		return Options{}, fmt.Errorf("%w: pgadvisory: unknown mode %d", distlock.ErrInvalidArgument, r.Mode)
	case len(strings.Split(r.FenceSequence, ".")) > 2 || strings.HasPrefix(r.FenceSequence, ".") || strings.HasSuffix(r.FenceSequence, "."):
		return Options{}, fmt.Errorf("%w: pgadvisory: fence sequence %q: want name or schema.name", distlock.ErrInvalidArgument, r.FenceSequence)
	}
	return r, nil
}
