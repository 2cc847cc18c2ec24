package migrate

import (
	"errors"
	"fmt"
	"reflect"

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
	if isNil(from) || isNil(to) {
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

// Close makes blocked Acquire calls return distlock.ErrClosed (each
// first releases what it held, within CleanupTimeout), stops the
// background work of PhaseShadow, waits for all of it, and then closes
// both composed Lockers. Held leases are not released; they expire after
// their TTL, and a PhaseBoth lease's Done still closes when its validity
// passes. Close is idempotent; its error joins the two Lockers' Close
// errors.
func (l *Locker) Close() error {
	l.lc.Close(lifecycle.Hooks{Release: func() {
		l.closeErr = errors.Join(l.from.Close(), l.to.Close())
	}})
	return l.closeErr
}

// isNil reports a nil Locker, also one held in a non-nil interface.
func isNil(l distlock.Locker) bool {
	if l == nil {
		return true
	}
	v := reflect.ValueOf(l)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// String names the phase and the two backends.
func (l *Locker) String() string {
	return fmt.Sprintf("migrate(%s -> %s, phase %v)", l.from.Guarantees().Backend, l.to.Guarantees().Backend, l.opts.Phase)
}
