package migrate

import (
	"time"
)

const (
	// DefaultShadowBudget bounds each background call PhaseShadow makes
	// on the new backend: 1 s.
	DefaultShadowBudget = time.Second

	// DefaultCleanupTimeout bounds the release of one backend's lease
	// when the other side failed or was lost: 5 s.
	DefaultCleanupTimeout = 5 * time.Second
)

// Options configure a Locker. The zero value takes every default.
type Options struct {
	// Phase is the migration step (required): PhaseFrom, PhaseShadow,
	// PhaseBoth or PhaseTo.
	Phase Phase

	// ShadowBudget bounds each background call PhaseShadow makes on the
	// new backend: an acquisition (which waits up to the budget while the
	// key is still held there, so that a hand-off in flight is not
	// recorded as contention), an extension, a release. The caller never
	// waits for these calls. Default DefaultShadowBudget.
	ShadowBudget time.Duration

	// OnShadow, if set, is called with the outcome of every background
	// call PhaseShadow makes on the new backend, from the goroutine that
	// made it. It must not block for long. ShadowStats counts the same
	// outcomes either way.
	OnShadow func(ShadowEvent)

	// CleanupTimeout bounds the release of one backend's lease when the
	// other's acquisition failed or its lease was lost. Default
	// DefaultCleanupTimeout.
	CleanupTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.ShadowBudget == 0 {
		o.ShadowBudget = DefaultShadowBudget
	}
	if o.CleanupTimeout == 0 {
		o.CleanupTimeout = DefaultCleanupTimeout
	}
	return o
}

func (o Options) validate() error {
	switch {
	case !o.Phase.valid():
		return invalid("unknown phase %v: use PhaseFrom, PhaseShadow, PhaseBoth or PhaseTo", o.Phase)
	case o.ShadowBudget < 0:
		return invalid("shadow budget must be > 0, got %v", o.ShadowBudget)
	case o.CleanupTimeout < 0:
		return invalid("cleanup timeout must be > 0, got %v", o.CleanupTimeout)
	}
	return nil
}
