package redissingle

import (
	"errors"
	"fmt"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
)

// ReplicationError is returned when fewer replicas than
// Options.WaitReplicas acknowledged an acquisition within WaitTimeout. The
// lock was released again. It matches distlock.ErrUnavailable.
type ReplicationError struct {
	Acked, Want int
}

// Error says how many replicas acknowledged.
func (e *ReplicationError) Error() string {
	return fmt.Sprintf("redissingle: %d of %d replicas acknowledged the lock in time; released it", e.Acked, e.Want)
}

// Unwrap makes errors.Is(err, distlock.ErrUnavailable) true.
func (e *ReplicationError) Unwrap() error { return distlock.ErrUnavailable }

// errUnknown marks an error after which the request may or may not have
// taken effect on the server (a reply lost, a call abandoned when its
// context ended). Acquisitions that end with it are cleaned up.
var errUnknown = errors.New("outcome unknown")

// transient lists the server error prefixes that mean "try again later".
// OOM (noeviction with memory full) is refused before a script's first
// write, so the script had no effect.
var transient = []string{"LOADING", "READONLY", "MASTERDOWN", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MOVED", "ASK", "NOREPLICAS", "OOM"}

// wrap maps an error of operation op to the distlock sentinels: replies
// saying the server cannot serve now and every transport error (refused,
// reset, timeout, a context that ended) match distlock.ErrUnavailable and
// keep the cause; those after which the request may have been executed
// also match errUnknown. Other server replies (a key of the wrong type, a
// server too old for SET NX GET) are returned as they are, wrapped.
func wrap(op string, err error) error {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		for _, p := range transient {
			if redis.HasErrorPrefix(err, p) {
				return fmt.Errorf("%w: redissingle: %s: %w", distlock.ErrUnavailable, op, err)
			}
		}
		return fmt.Errorf("redissingle: %s: %w", op, err)
	}
	if notSent(err) {
		return fmt.Errorf("%w: redissingle: %s: %w", distlock.ErrUnavailable, op, err)
	}
	return fmt.Errorf("%w: redissingle: %s: %w: %w", distlock.ErrUnavailable, op, errUnknown, err)
}

// notSent reports errors raised before the request could reach the
// server: no connection could be made or had.
func notSent(err error) bool {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	return errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout)
}
