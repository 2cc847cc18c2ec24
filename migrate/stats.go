package migrate

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/distlock/distlock"
)

// ShadowOp names a background call PhaseShadow makes on the new backend.
type ShadowOp string

// The calls PhaseShadow makes on the new backend.
const (
	ShadowAcquire ShadowOp = "acquire"
	ShadowExtend  ShadowOp = "extend"
	ShadowRelease ShadowOp = "release"
)

// ShadowEvent is the outcome of one background call on the new backend
// in PhaseShadow.
type ShadowEvent struct {
	Key     string
	Op      ShadowOp
	Latency time.Duration
	// Err is nil on success. For ShadowAcquire, an error matching
	// distlock.ErrNotAcquired and context.DeadlineExceeded means the key
	// stayed held on the new backend for the whole budget (contention the
	// old backend did not see, or a hand-off slower than the budget); one
	// matching distlock.ErrUnavailable, that the new backend could not be
	// reached. For ShadowRelease, distlock.ErrLeaseLost means the mirror
	// had expired or been taken over while the old lease was held.
	Err error
}

// ShadowStats counts the outcomes of PhaseShadow's background calls since
// the Locker was created.
type ShadowStats struct {
	Acquired  int64 // mirrors acquired
	Contended int64 // acquisitions that found the key held for the whole budget
	Abandoned int64 // acquisitions cancelled because the holder released first or the Locker closed
	Failed    int64 // acquisitions that failed otherwise (unreachable, ...)
	Extended  int64 // mirror extensions that succeeded
	Released  int64 // mirrors released while still held
	Lost      int64 // mirrors found lost (expired or taken over) at extension or release
	Errors    int64 // extensions and releases that failed otherwise
	// AcquireLatency is the total, and MaxAcquireLatency the longest,
	// time of the mirror acquisitions counted in Acquired.
	AcquireLatency, MaxAcquireLatency time.Duration
}

// shadowCounters is the Locker's ShadowStats and BothStats under a mutex.
type shadowCounters struct {
	mu sync.Mutex
	s  ShadowStats
	b  BothStats
}

// ShadowStats returns the counts of PhaseShadow's background calls (all
// zero in other phases).
func (l *Locker) ShadowStats() ShadowStats {
	l.stats.mu.Lock()
	defer l.stats.mu.Unlock()
	return l.stats.s
}

// record counts ev and passes it to Options.OnShadow.
func (l *Locker) record(ev ShadowEvent) {
	c := &l.stats
	c.mu.Lock()
	s := &c.s
	lost := errors.Is(ev.Err, distlock.ErrLeaseLost)
	switch {
	case ev.Op == ShadowAcquire && ev.Err == nil:
		s.Acquired++
		s.AcquireLatency += ev.Latency
		s.MaxAcquireLatency = max(s.MaxAcquireLatency, ev.Latency)
	case ev.Op == ShadowAcquire && errors.Is(ev.Err, context.Canceled):
		s.Abandoned++
	case ev.Op == ShadowAcquire && errors.Is(ev.Err, context.DeadlineExceeded) && !errors.Is(ev.Err, distlock.ErrUnavailable):
		s.Contended++
	case ev.Op == ShadowAcquire:
		s.Failed++
	case ev.Err == nil && ev.Op == ShadowExtend:
		s.Extended++
	case ev.Err == nil:
		s.Released++
	case lost:
		s.Lost++
	default:
		s.Errors++
	}
	c.mu.Unlock()
	if l.opts.OnShadow != nil {
		l.opts.OnShadow(ev)
	}
}

// BothStats measures how long PhaseBoth waiters held the old backend's
// lock while they waited for the new one's, since the Locker was created.
type BothStats struct {
	Waits    int64 // waits for the new lock that began while holding the old one
	Restarts int64 // waits given up (the old lease ended or its validity passed), the old lock let go
	// HeldWhileWaiting is the total, and MaxHeldWhileWaiting the longest,
	// time the old lock was held during those waits.
	HeldWhileWaiting, MaxHeldWhileWaiting time.Duration
}

// BothStats returns PhaseBoth's wait measurements (all zero in other
// phases).
func (l *Locker) BothStats() BothStats {
	l.stats.mu.Lock()
	defer l.stats.mu.Unlock()
	return l.stats.b
}

// recordWait counts one wait for the new lock that held the old one for d.
func (l *Locker) recordWait(d time.Duration, restarted bool) {
	c := &l.stats
	c.mu.Lock()
	defer c.mu.Unlock()
	c.b.Waits++
	if restarted {
		c.b.Restarts++
	}
	c.b.HeldWhileWaiting += d
	c.b.MaxHeldWhileWaiting = max(c.b.MaxHeldWhileWaiting, d)
}
