package pgadvisory

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
)

// PoolerError is returned when a session-mode Locker finds itself behind
// a connection pooler: the backend process answering its statements is not
// the one it connected to (the pid in the connection's BackendKeyData
// differs from pg_backend_pid(), or pg_backend_pid() changed between two
// statements of one lease). A transaction-pooling proxy such as PgBouncer
// would run the lock and the unlock on different server connections and
// leave the lock on a connection other clients then use. Connect to the
// server directly, or use ModeTransaction. It matches
// distlock.ErrInvalidArgument (a misconfiguration; retrying cannot help).
type PoolerError struct {
	// ConnPID is the pid the server announced at connection time, and
	// BackendPID the pid of the backend that ran the statement.
	ConnPID, BackendPID uint32
	// Lease is true when the pid changed under a held lease: the lease
	// is reported lost and the connection closed.
	Lease bool
}

// Error explains the pid mismatch and what to do.
func (e *PoolerError) Error() string {
	what := "the connection's statements run on backend"
	if e.Lease {
		what = "a held lease's statement ran on backend"
	}
	return fmt.Sprintf("pgadvisory: connection pooler detected: %s %d, but the connection was opened with backend %d; "+
		"session advisory locks need a direct connection (or use mode=transaction)", what, e.BackendPID, e.ConnPID)
}

// Unwrap makes errors.Is(err, distlock.ErrInvalidArgument) true.
func (e *PoolerError) Unwrap() error { return distlock.ErrInvalidArgument }

// LockTableFullError is returned when the server's shared lock table is
// full (SQLSTATE 53200, out of shared memory): it holds
// max_locks_per_transaction x (max_connections + max_prepared_transactions)
// locks in all. Acquire returns it at once instead of waiting. It matches
// distlock.ErrUnavailable and unwraps to the server's *pgconn.PgError.
type LockTableFullError struct {
	Key string
	Err *pgconn.PgError
}

// Error names the key and the setting to raise.
func (e *LockTableFullError) Error() string {
	return fmt.Sprintf("pgadvisory: lock %q: the server's shared lock table is full (raise max_locks_per_transaction, or hold fewer locks): %v", e.Key, e.Err)
}

// Unwrap returns distlock.ErrUnavailable and the server's error.
func (e *LockTableFullError) Unwrap() []error { return []error{distlock.ErrUnavailable, e.Err} }

// FenceSetupError is returned when the fence sequence is missing and
// cannot be created (typically: no CREATE privilege on the schema, the
// default for ordinary users on Postgres 15's public schema). A DBA runs
// the statements in Fix once. It matches distlock.ErrUnavailable and
// unwraps to the server's error.
type FenceSetupError struct {
	Sequence string
	Fix      string
	Err      error
}

// Error names the sequence and the statements that fix it.
func (e *FenceSetupError) Error() string {
	return fmt.Sprintf("pgadvisory: fence sequence %s is missing and could not be created (%v); run as its owner: %s",
		e.Sequence, e.Err, e.Fix)
}

// Unwrap returns distlock.ErrUnavailable and the cause.
func (e *FenceSetupError) Unwrap() []error { return []error{distlock.ErrUnavailable, e.Err} }

// FenceSequenceError is returned when the fence sequence exists but cannot
// give fences that increase across holders: it is not a sequence, or its
// settings break the order (CACHE above 1: each session draws from a
// block of its own; CYCLE: values wrap around; an increment below 1:
// values decrease; MINVALUE below 1: fences of 0 or below). Its owner
// runs Fix once; the next acquisition checks again. It matches
// distlock.ErrInvalidArgument.
type FenceSequenceError struct {
	Sequence string
	Problems []string // each setting at fault, and why
	Fix      string
}

// Error names the sequence, what is wrong with it and the fix.
func (e *FenceSequenceError) Error() string {
	return fmt.Sprintf("pgadvisory: fence sequence %s cannot give increasing fences: %s; fix: %s",
		e.Sequence, strings.Join(e.Problems, ", "), e.Fix)
}

// Unwrap returns distlock.ErrInvalidArgument.
func (e *FenceSequenceError) Unwrap() error { return distlock.ErrInvalidArgument }

// SQLSTATE codes the Locker reacts to.
const (
	codeOutOfSharedMemory = "53200"
	codeUndefinedTable    = "42P01"
	codeInsufficientPriv  = "42501"
	codeDuplicateTable    = "42P07"
	codeUniqueViolation   = "23505"
	codeIdleSession       = "57P05" // idle_session_timeout ended the session
)

// endedIdle reports an error that proves the server ended the session
// for idleness before it read the statement that failed: a pooled
// connection kept its lease's idle timeout (idle.go) and, in spite of the
// pool's margin, the statement came too late (a long pause of the
// client), or the confirmation after a long wait came too late. Either
// way the session is gone with any lock it held (Postgres frees a
// backend's locks when it exits), so the acquisition can start again on
// another connection.
func endedIdle(err error) bool {
	pe, ok := pgError(err)
	return ok && pe.Code == codeIdleSession
}

// errUnknown marks a request whose effect on the server is unknown (the
// reply was lost, the context ended in flight); the connection was closed,
// so the server frees anything it may have locked for it.
var errUnknown = errors.New("outcome unknown; connection closed, so the server frees any lock it took")

// pgError returns the server error in err, if any.
func pgError(err error) (*pgconn.PgError, bool) {
	var pe *pgconn.PgError
	return pe, errors.As(err, &pe)
}

// sessionEnded reports errors that prove the server session is gone: a
// FATAL error (terminated by an administrator, idle timeout, shutdown) or
// the connection closed under us. A request that timed out or whose
// context ended proves nothing.
func sessionEnded(err error) bool {
	if pe, ok := pgError(err); ok {
		return pe.Severity == "FATAL" || pe.Severity == "PANIC"
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout(), pgconn.Timeout(err), errors.Is(err, errRequestTimeout),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return err != nil
}

// wrap maps an error of operation op to the distlock sentinels: every
// transport error and server error matches distlock.ErrUnavailable and
// keeps the cause.
func wrap(op string, err error) error {
	return fmt.Errorf("%w: pgadvisory: %s: %w", distlock.ErrUnavailable, op, err)
}

// errNotQueued marks failures before the lock statement was sent.
var errNotQueued = errors.New("not queued")

// staleSessions is the error of an acquisition that found n pooled
// sessions ended for idleness (the last error err). Unlike a lost reply,
// this outcome is known: each session ended with whatever it held, so
// nothing is held.
func staleSessions(key string, n int, err error) error {
	cause := err
	if pe, ok := pgError(err); ok && pe != nil {
		cause = pe // the server's own words, without "outcome unknown"
	}
	return fmt.Errorf("%w: pgadvisory: %q: the server ended %d pooled sessions for idleness (the client paused past the pool's idle margin); nothing is held: %w",
		distlock.ErrUnavailable, key, n, cause)
}

// retryable: a blocking Acquire tries again after errors that happen
// before it queues on the server (it cannot connect), and after a grant
// that came too late. A waiting session that ends (terminated, server
// restarted) is not retried: the error says so (WaiterSessions).
func retryable(err error) bool {
	var pe *PoolerError
	var fe *FenceSetupError
	var te *LockTableFullError
	switch {
	case errors.As(err, &pe), errors.As(err, &fe), errors.As(err, &te), isRefusal(err):
		return false
	case errors.Is(err, lease.ErrExpiredInFlight), errors.Is(err, errNotQueued):
		return true
	}
	return false
}

// lockError maps a failed lock statement (its connection already closed).
func (l *Locker) lockError(ctx context.Context, key string, err error) error {
	if pe, ok := pgError(err); ok {
		switch pe.Code {
		case codeOutOfSharedMemory:
			return &LockTableFullError{Key: key, Err: pe}
		case codeInsufficientPriv, codeUndefinedTable:
			l.fenceReady.Store(false)
			return l.fenceError(pe)
		}
	}
	if ctx.Err() != nil {
		return errors.Join(wrap("lock "+strconv.Quote(key), errors.Join(errUnknown, err)), context.Cause(ctx), ctx.Err())
	}
	return wrap("lock "+strconv.Quote(key), errors.Join(errUnknown, err))
}
