package redlock

import (
	"errors"
	"fmt"
	"strings"

	"github.com/distlock/distlock"
)

// NodeError is what one node answered, or why it did not.
type NodeError struct {
	// Node is the node's address, as given to New.
	Node string
	// Err matches ErrHeld if the key was held by another owner on the
	// node, distlock.ErrUnavailable if the node could not be reached or
	// did not answer within the node timeout (its cause kept), or is the
	// server's error reply.
	Err error
}

// Error is "node: what it answered".
func (e NodeError) Error() string { return e.Node + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e NodeError) Unwrap() error { return e.Err }

// ErrHeld is a node's answer when another owner holds the key there. It
// matches distlock.ErrNotAcquired.
var ErrHeld = fmt.Errorf("%w: held by another owner", distlock.ErrNotAcquired)

// ErrNotOurs is a node's answer to an extension or release when the key
// there is gone or someone else's. It matches distlock.ErrLeaseLost.
var ErrNotOurs = fmt.Errorf("%w: key gone or someone else's", distlock.ErrLeaseLost)

// QuorumError says that an operation did not reach a majority of nodes, and
// what each node that did not take part answered.
//
// For an acquisition, with h nodes held by others and u nodes unavailable
// (unreachable, too slow, or an error reply), it matches
// distlock.ErrNotAcquired if contention alone explains the failure
// (Acquired + u < Needed: even if every unavailable node had said yes),
// distlock.ErrUnavailable if outages alone do (Acquired + h < Needed), and
// both if each does or neither does alone (mixed causes). So errors.Is(err,
// ErrUnavailable) without ErrNotAcquired means the nodes are down, not
// busy. For an extension or release, it matches distlock.ErrLeaseLost if
// too many nodes answered that the key is not ours for a majority to hold
// it, else distlock.ErrUnavailable. For any operation, it also matches
// distlock.ErrAccessDenied (or distlock.ErrTLS) if the nodes that refused
// the credentials (or whose TLS settings do not match) are alone enough
// to deny the majority (Acquired + len(Nodes) - refused < Needed): no
// retry fixes that, so a blocked Acquire returns it at once.
type QuorumError struct {
	// Op is "acquire", "extend" or "release", or one of the Inspector's:
	// "inspect", "list" or "force release" (which match
	// distlock.ErrUnavailable).
	Op string
	// Key is the lock's key (List's prefix for "list").
	Key string
	// Nodes lists the nodes that did not confirm, in the order given to New.
	Nodes []NodeError
	// Acquired is how many nodes confirmed (took the key, extended it or
	// deleted it; for the Inspector's, answered); Needed is the majority,
	// N/2+1.
	Acquired, Needed int
}

// Error names the operation, the count against the quorum and every node's answer.
func (e *QuorumError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "redlock: %s %q: %d of %d nodes needed confirmed", e.Op, e.Key, e.Acquired, e.Needed)
	for i, n := range e.Nodes {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(n.Error())
	}
	if len(e.Nodes) > 0 {
		b.WriteString(")")
	}
	return b.String()
}

func (e *QuorumError) count(target error) int {
	k := 0
	for _, n := range e.Nodes {
		if errors.Is(n.Err, target) {
			k++
		}
	}
	return k
}

// Is implements the matching documented on QuorumError.
func (e *QuorumError) Is(target error) bool {
	if target == distlock.ErrAccessDenied || target == distlock.ErrTLS {
		return e.Acquired+len(e.Nodes)-e.count(target) < e.Needed
	}
	switch e.Op {
	case "acquire":
		h := e.count(distlock.ErrNotAcquired)
		u := len(e.Nodes) - h
		busy, down := e.Acquired+u < e.Needed, e.Acquired+h < e.Needed
		if busy == down {
			busy, down = true, true
		}
		return (target == distlock.ErrNotAcquired && busy) || (target == distlock.ErrUnavailable && down)
	default:
		lost := e.count(distlock.ErrLeaseLost)
		definite := e.Acquired+len(e.Nodes)-lost < e.Needed
		return (target == distlock.ErrLeaseLost && definite) || (target == distlock.ErrUnavailable && !definite)
	}
}

// unavailable wraps a node's transport error or error reply.
func unavailable(err error) error {
	return fmt.Errorf("%w: %w", distlock.ErrUnavailable, err)
}
