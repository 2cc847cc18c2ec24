package memlock

import (
	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lifecycle"
)

// Locker is a client on an in-process lock space. It is safe for
// concurrent use.
type Locker struct {
	space    *space
	defaults distlock.Options
	lc       lifecycle.Lifecycle // closed flag, calls in flight, watchdogs
}

var _ distlock.Locker = (*Locker)(nil)

// New returns a Locker on a new private space. opts are the default
// per-call options; nil, or zero fields, take distlock.DefaultOptions
// (TTL distlock.DefaultTTL, no automatic extension). Invalid values are
// reported by the first call that uses them, with an error matching
// distlock.ErrInvalidArgument. Use NewHandle to open more clients on the
// same space.
func New(opts *distlock.Options) *Locker {
	return newLocker(newSpace(), defaults(opts))
}

// newLocker returns an open Locker on s with per-call defaults d.
func newLocker(s *space, d distlock.Options) *Locker {
	l := &Locker{space: s, defaults: d}
	l.lc.Init()
	return l
}

// NewHandle returns another client on l's space, with l's default options
// and its own Close. It works on a closed l too.
func (l *Locker) NewHandle() *Locker {
	return newLocker(l.space, l.defaults)
}

// Guarantees: one process, one clock, no servers to lose. Leases end at
// their TTL like every TTL-based backend's, so a holder goroutine that
// stalls past its TTL overlaps the next holder (ClockIndependentSafety
// false): check Done or ValidUntil, or use the fence.
func (l *Locker) Guarantees() distlock.Guarantees {
	return distlock.Guarantees{
		Backend:          "mem",
		Fence:            distlock.FenceMonotonic,
		FenceScope:       "space (one counter per process-wide space)",
		PushWakeup:       true,
		LostNotification: true,
	}
}

// Close makes further TryAcquire and Acquire calls return
// distlock.ErrClosed, wakes the blocked Acquire calls (those of this
// handle return ErrClosed; waiters of other handles on the space look
// again and wait on), stops and joins the watchdogs of this handle's
// leases, and waits for this handle's calls in flight. Held leases stay
// until released or expired; their Extend and Release keep working.
// Close is idempotent and always returns nil.
func (l *Locker) Close() error {
	l.lc.Close(lifecycle.Hooks{WakeLocked: l.space.wakeAll})
	return nil
}

// Revoke frees key whoever holds it, as an operator would, and notifies
// the holder's lease (its Err matches distlock.ErrLeaseLost) before
// returning. It reports whether the key was held. It works on a closed
// Locker too.
func (l *Locker) Revoke(key string) bool {
	return l.space.revoke(key)
}
