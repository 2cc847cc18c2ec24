package migrate

import (
	"fmt"
	"strings"

	"github.com/distlock/distlock"
)

// Phase is the step of a migration a client is in. A fleet rolls through
// the phases in order, one step at a time: clients in two adjacent phases
// exclude each other on one key (see Adjacent), clients two steps apart
// do not.
type Phase int

const (
	// PhaseFrom locks on the old backend only.
	PhaseFrom Phase = iota + 1
	// PhaseShadow locks on the old backend, which alone gives exclusion,
	// and mirrors every lease on the new one in the background, within
	// Options.ShadowBudget, recording the outcomes (ShadowStats,
	// Options.OnShadow). The caller never waits for the new backend.
	PhaseShadow
	// PhaseBoth locks on the old backend, then on the new one; the lease
	// holds both and is valid while both are.
	PhaseBoth
	// PhaseTo locks on the new backend only.
	PhaseTo
)

var phaseNames = map[Phase]string{PhaseFrom: "from", PhaseShadow: "shadow", PhaseBoth: "both", PhaseTo: "to"}

// String returns "from", "shadow", "both" or "to" ("phase(N)" for a value
// that is none of them).
func (p Phase) String() string {
	if s, ok := phaseNames[p]; ok {
		return s
	}
	return fmt.Sprintf("phase(%d)", int(p))
}

// ParsePhase parses a phase name as String writes it (case-insensitive).
// Any other name returns an error matching distlock.ErrInvalidArgument.
func ParsePhase(s string) (Phase, error) {
	for p, name := range phaseNames {
		if strings.EqualFold(s, name) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown migration phase %q: use from, shadow, both or to", distlock.ErrInvalidArgument, s)
}

func (p Phase) valid() bool { _, ok := phaseNames[p]; return ok }

// Adjacent reports whether clients in phases p and q may run side by side
// in one fleet and still exclude each other: p and q are equal or one
// step apart. (from, shadow) and (shadow, both) share the old backend's
// lock, which both take and wait for; (both, to) share the new backend's.
// Two steps apart, nothing is shared that both wait for: shadow takes
// the new backend's lock only on a best-effort basis.
func Adjacent(p, q Phase) bool {
	return p.valid() && q.valid() && p-q <= 1 && q-p <= 1
}

// holdsFrom and holdsTo say which backends' locks give exclusion in p.
func (p Phase) holdsFrom() bool { return p == PhaseFrom || p == PhaseShadow || p == PhaseBoth }
func (p Phase) holdsTo() bool   { return p == PhaseBoth || p == PhaseTo }
