package redissingle

import (
	"errors"
	"fmt"

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
