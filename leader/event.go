package leader

import (
	"errors"
	"time"
)

// ErrResigned is the cause (context.Cause) of the work's context when the
// Candidate resigned, and the Err of the Resigned event.
var ErrResigned = errors.New("leader: resigned")

// Term is one period of leadership: from the acquisition of the election
// key to the end of the lease.
type Term struct {
	// Key is the election key.
	Key string
	// Fence is the lease's fencing token: strictly increasing across
	// terms, whichever candidate leads, where the backend's fences are
	// monotonic (distlock.FenceMonotonic). Never 0.
	Fence uint64
	// Start is when the Candidate became leader (after the acquisition
	// returned).
	Start time.Time
}

// Kind says what changed.
type Kind int

// The changes a Candidate reports (WithObserver). Each term reports
// Elected, then exactly one of the others.
const (
	// Elected: the Candidate holds the election key; the work starts.
	Elected Kind = iota + 1
	// Lost: the lease was lost (expired, taken over, revoked, its session
	// ended, or the maximum term reached). Err matches
	// distlock.ErrLeaseLost.
	Lost
	// Resigned: Resign ended the term. Err is ErrResigned.
	Resigned
	// SteppedDown: the work returned (Err is its error, nil if none) or
	// Run's context ended (Err is the context's cause).
	SteppedDown
)

// String returns the kind's name in lower case ("elected", ...).
func (k Kind) String() string {
	switch k {
	case Elected:
		return "elected"
	case Lost:
		return "lost"
	case Resigned:
		return "resigned"
	case SteppedDown:
		return "stepped down"
	}
	return "unknown"
}

// Event is one leadership change of a Candidate.
type Event struct {
	Kind Kind
	// Term is the term that began (Elected) or ended.
	Term Term
	// Err says why a term ended; nil for Elected and for work that
	// returned nil.
	Err error
	// At is when the change was seen.
	At time.Time
}
