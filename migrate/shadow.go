package migrate

import (
	"context"
	"sync"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/fencing"
)

// shadowed is a PhaseShadow lease: the old backend's lease, which alone
// gives exclusion, and a mirror of it on the new backend taken, extended
// and released in the background within ShadowBudget. Its fence is the
// old backend's.
type shadowed struct {
	distlock.Lease // the old backend's
	l              *Locker

	mu       sync.Mutex
	mirror   distlock.Lease // the new backend's, once acquired
	released bool
	cancel   context.CancelFunc // cancels the mirror's acquisition
}

// startShadow returns a's PhaseShadow lease and starts mirroring it.
func (l *Locker) startShadow(a distlock.Lease, key string, opts []distlock.Option) distlock.Lease {
	s := &shadowed{Lease: a, l: l}
	ctx, cancel := context.WithTimeout(l.lc.Closing().Context(), l.opts.ShadowBudget)
	s.cancel = cancel
	if !l.lc.Go(func() { defer cancel(); s.mirrorAcquire(ctx, key, opts) }) {
		cancel() // closing: no mirror
	}
	return s
}

// mirrorAcquire takes the key on the new backend, waiting up to the
// budget, and keeps the lease unless the holder has released meanwhile.
func (s *shadowed) mirrorAcquire(ctx context.Context, key string, opts []distlock.Option) {
	start := time.Now()
	m, err := s.l.to.Acquire(ctx, key, opts...)
	s.l.record(ShadowEvent{Key: key, Op: ShadowAcquire, Latency: time.Since(start), Err: err})
	if err != nil {
		return
	}
	s.mu.Lock()
	late := s.released
	if !late {
		s.mirror = m
	}
	s.mu.Unlock()
	if late {
		s.l.mirrorRelease(m)
	}
}

// fences holds the old backend's fence only: the mirror gives no
// exclusion.
func (s *shadowed) fences() fencing.Pair { return fencing.Pair{From: s.Fence()} }

// Extend extends the old backend's lease; on success it extends the
// mirror in the background.
func (s *shadowed) Extend(ctx context.Context, ttl time.Duration) error {
	if err := s.Lease.Extend(ctx, ttl); err != nil {
		return err
	}
	s.mu.Lock()
	m := s.mirror
	s.mu.Unlock()
	if m != nil {
		s.l.lc.Go(func() {
			ctx, cancel := context.WithTimeout(s.l.lc.Closing().Context(), s.l.opts.ShadowBudget)
			defer cancel()
			start := time.Now()
			err := m.Extend(ctx, ttl)
			s.l.record(ShadowEvent{Key: m.Key(), Op: ShadowExtend, Latency: time.Since(start), Err: err})
		})
	}
	return nil
}

// Release starts the mirror's release in the background (or cancels its
// acquisition), then releases the old backend's lease and returns its
// result.
func (s *shadowed) Release(ctx context.Context) error {
	s.mu.Lock()
	first := !s.released
	s.released = true
	m := s.mirror
	s.mirror = nil
	s.mu.Unlock()
	if first {
		s.cancel()
		if m != nil {
			s.l.mirrorRelease(m)
		}
	}
	return s.Lease.Release(ctx)
}

// mirrorRelease releases a mirror lease in the background, within the
// budget.
func (l *Locker) mirrorRelease(m distlock.Lease) {
	l.lc.Go(func() {
		ctx, cancel := context.WithTimeout(l.lc.Closing().Context(), l.opts.ShadowBudget)
		defer cancel()
		start := time.Now()
		err := m.Release(ctx)
		l.record(ShadowEvent{Key: m.Key(), Op: ShadowRelease, Latency: time.Since(start), Err: err})
	})
}
