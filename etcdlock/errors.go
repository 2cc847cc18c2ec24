package etcdlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/retry"
)

var (
	// ErrSessionExpired: the etcd lease a queued Acquire waited under
	// expired, or was revoked, or could not be renewed within its TTL
	// (the waiter was cut off from the cluster). Its place in the queue
	// is gone; Acquire returns it promptly rather than wait on. It matches
	// distlock.ErrUnavailable.
	ErrSessionExpired = fmt.Errorf("%w: etcdlock: lease (session) expired", distlock.ErrUnavailable)

	// ErrKeyGone: an extension or release found the lock's key deleted or
	// re-created (expired lease, operator deletion). It matches
	// distlock.ErrLeaseLost. Release does not return it when an earlier
	// try of its own failed and may have deleted the key, if the lock was
	// still held when Release began and a fresh keepalive renews its lease.
	ErrKeyGone = fmt.Errorf("%w: etcdlock: lock key gone or re-created", distlock.ErrLeaseLost)

	// ErrLeaseNotFound: the server no longer knows the lock's etcd lease
	// (it expired or was revoked). It matches distlock.ErrLeaseLost.
	ErrLeaseNotFound = fmt.Errorf("%w: etcdlock: etcd lease not found", distlock.ErrLeaseLost)

	// errClosedKeepAlive is the cause of the loss of the leases still
	// held when the Locker is closed: nothing renews them any more.
	errClosedKeepAlive = fmt.Errorf("%w: etcdlock: Locker closed, keepalives stopped", distlock.ErrClosed)
)

// unavailable wraps a request's error so that it matches
// distlock.ErrUnavailable, keeping the cause.
func unavailable(op string, err error) error {
	if errors.Is(err, distlock.ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: etcdlock: %s: %w", distlock.ErrUnavailable, op, err)
}

// ctxErr is retry.Ended(ctx, err) once ctx has ended, else err.
func ctxErr(ctx context.Context, err error) error {
	if e := retry.Ended(ctx, err); e != nil {
		return e
	}
	return err
}

// errHeld is TryAcquire's error when key is held by another entry.
func errHeld(key string) error {
	return fmt.Errorf("%w: etcdlock: %q is held", distlock.ErrNotAcquired, key)
}
