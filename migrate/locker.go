package migrate

import (
	"errors"
	"fmt"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lifecycle"
)

// Locker composes an old backend's Locker (from) and a new one's (to) in
// one migration phase. It is safe for concurrent use.
type Locker struct {
	from, to distlock.Locker
	opts     Options
	stats    shadowCounters
	lc       lifecycle.Lifecycle // closed flag, calls in flight, background work
	closeErr error               // set by Close's Shut hook
}

var _ distlock.Locker = (*Locker)(nil)

// New returns a Locker in opts.Phase over from (the backend the fleet
// leaves) and to (the one it moves to). The Locker owns both: its Close
// closes them. Per-call options (WithTTL, WithAutoExtend, ...) are passed
// to both; each backend's own defaults apply where a call sets none.
//
// A nil Locker, from and to being the same Locker, an unknown phase, a
// negative duration, or an in-process backend paired with a
// cross-process one (a fleet of processes cannot migrate through a lock
// only one process sees) return an error matching
// distlock.ErrInvalidArgument.
func New(from, to distlock.Locker, opts Options) (*Locker, error) {
	if from == nil || to == nil {
		return nil, invalid("both the from and the to Locker are needed")
	}
	if from == to {
		return nil, invalid("from and to are the same Locker: give the backend the fleet leaves and the one it moves to")
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	gf, gt := from.Guarantees(), to.Guarantees()
	if gf.CrossProcess != gt.CrossProcess {
		return nil, invalid("%s and %s cannot be paired: one is in-process, the other shared between processes", gf.Backend, gt.Backend)
	}
	l := &Locker{from: from, to: to, opts: opts.withDefaults()}
	l.lc.Init()
	return l, nil
}

// Phase is the Locker's phase.
func (l *Locker) Phase() Phase { return l.opts.Phase }

// From and To are the composed Lockers.
func (l *Locker) From() distlock.Locker { return l.from }

// To is the new backend's Locker.
func (l *Locker) To() distlock.Locker { return l.to }

// Close closes both composed Lockers (which makes blocked Acquire calls
// return distlock.ErrClosed), stops the background work of PhaseShadow
// and the loss tracking of PhaseBoth leases, and waits for all of it.
// Held leases are not released; they expire after their TTL. Close is
// idempotent; its error joins the two Lockers' Close errors.
func (l *Locker) Close() error {
	l.lc.Close(lifecycle.Hooks{Shut: func() {
		l.closeErr = errors.Join(l.from.Close(), l.to.Close())
	}})
	return l.closeErr
}

// String names the phase and the two backends.
func (l *Locker) String() string {
	return fmt.Sprintf("migrate(%s -> %s, phase %v)", l.from.Guarantees().Backend, l.to.Guarantees().Backend, l.opts.Phase)
}
