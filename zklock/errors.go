package zklock

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/retry"
)

// Causes joined with distlock.ErrLeaseLost (in Lease.Err) or returned by a
// blocked Acquire whose session ended. When Close ended the session, the
// cause is distlock.ErrClosed.
var (
	// ErrSessionExpired: the ZooKeeper server expired the session that
	// owned the lock node, so the node is gone.
	ErrSessionExpired = errors.New("zklock: ZooKeeper session expired")
	// ErrSessionPresumedExpired: the client heard nothing from the
	// ensemble for a whole session timeout; the server has expired the
	// session or will as soon as it can, and the Locker acts as if it had.
	ErrSessionPresumedExpired = errors.New("zklock: no word from ZooKeeper for a session timeout; session presumed expired")
	// ErrNodeDeleted: the lock node was deleted by someone else (an
	// operator revoking the lock).
	ErrNodeDeleted = errors.New("zklock: lock node deleted")
)

// SessionError is returned by a blocked Acquire whose ZooKeeper session
// ended while it waited in the queue (scenario S26 of
// docs/conformance.md): the queue entry died with the session, so the
// call stops instead of waiting on. It matches distlock.ErrUnavailable
// and its Cause (ErrSessionExpired or ErrSessionPresumedExpired), or
// distlock.ErrClosed when Close ended the session.
type SessionError struct {
	// Key is the lock's key.
	Key string
	// Cause is ErrSessionExpired, ErrSessionPresumedExpired or
	// distlock.ErrClosed.
	Cause error
}

// Error says whose wait ended and why.
func (e *SessionError) Error() string {
	return fmt.Sprintf("zklock: waiting for %q: %v", e.Key, e.Cause)
}

// Unwrap returns distlock.ErrUnavailable and the cause; when the session
// ended because this Locker was closed, only the cause,
// distlock.ErrClosed, as every Acquire woken by Close returns.
func (e *SessionError) Unwrap() []error {
	if errors.Is(e.Cause, distlock.ErrClosed) {
		return []error{e.Cause}
	}
	return []error{distlock.ErrUnavailable, e.Cause}
}

// ctxErr is the error of a context that ended: ctx.Err(), joined with
// context.Cause(ctx) when the context was given a cause of its own
// (context.WithCancelCause, WithTimeoutCause), so that it matches both.
func ctxErr(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || cause == err {
		return err
	}
	return errors.Join(err, cause)
}

// notAcquired is the error of an acquisition whose context ended:
// retry.Ended's join of distlock.ErrNotAcquired, ctx.Err() and err (err
// alone if it matches both already), joined with context.Cause(ctx) when
// the context was given a cause of its own and err does not carry it;
// last, the error of an earlier attempt, is kept.
func notAcquired(ctx context.Context, err, last error) error {
	e := retry.Ended(ctx, err)
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() && !errors.Is(e, cause) {
		e = errors.Join(e, cause)
	}
	if last == nil {
		return e
	}
	return errors.Join(e, last)
}

// transient reports zk errors that mean "not now": the connection or the
// session is gone, or the call was abandoned.
func transient(err error) bool {
	var ne net.Error
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrSessionMoved) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne)
}

// wrap maps an error of operation op to the distlock sentinels: transport
// and session errors match distlock.ErrUnavailable; others (a bad ACL, an
// authentication failure) are returned wrapped.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if transient(err) {
		return fmt.Errorf("%w: zklock: %s: %w", distlock.ErrUnavailable, op, err)
	}
	return fmt.Errorf("zklock: %s: %w", op, err)
}
