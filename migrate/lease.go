package migrate

import (
	"github.com/distlock/distlock"
	"github.com/distlock/distlock/fencing"
)

// Fences returns the fence pair of a lease from a migrate Locker, and
// false for any other lease. From is the old backend's fence where the
// lease holds its lock with exclusion (PhaseFrom, PhaseShadow,
// PhaseBoth), To the new backend's where it does (PhaseBoth, PhaseTo);
// the other is 0. A resource that admits writes with a
// fencing.PairGuard or fencing.PairRegister stays safe in every fleet of
// adjacent phases (see the package documentation).
func Fences(lease distlock.Lease) (fencing.Pair, bool) {
	if p, ok := lease.(interface{ fences() fencing.Pair }); ok {
		return p.fences(), true
	}
	return fencing.Pair{}, false
}

// single is a lease on one backend (PhaseFrom, PhaseTo): the backend's
// lease as it is, with its fence placed in the pair.
type single struct {
	distlock.Lease
	from bool // the old backend's lease
}

// wrapSingle wraps a, or returns nil for a nil lease.
func wrapSingle(a distlock.Lease, from bool) distlock.Lease {
	if a == nil {
		return nil
	}
	return &single{Lease: a, from: from}
}

func (s *single) fences() fencing.Pair {
	if s.from {
		return fencing.Pair{From: s.Fence()}
	}
	return fencing.Pair{To: s.Fence()}
}
