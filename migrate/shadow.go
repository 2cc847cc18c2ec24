package migrate

import (
	"context"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/fencing"
)

// shadowed is a PhaseShadow lease: the old backend's lease, which alone
// gives exclusion, and a mirror of it on the new backend that one
// goroutine of the Locker takes, extends and releases, each call within
// ShadowBudget and in order. Its fence is the old backend's.
type shadowed struct {
	distlock.Lease // the old backend's
	l              *Locker
	key            string

	released context.Context // ends when the holder releases (or Close begins)
	release  context.CancelFunc
	extend   chan time.Duration // the latest explicit extension not yet mirrored
}

// startShadow returns a's PhaseShadow lease and starts its mirror.
func (l *Locker) startShadow(a distlock.Lease, key string, opts []distlock.Option) distlock.Lease {
	s := &shadowed{Lease: a, l: l, key: key, extend: make(chan time.Duration, 1)}
	s.released, s.release = context.WithCancel(l.lc.Closing().Context())
	if !l.lc.Go(func() { s.mirror(opts) }) {
		s.release() // closing: no mirror
	}
	return s
}

// mirror takes the key on the new backend (waiting up to the budget, and
// no longer than the holder holds), follows the holder's extensions, and
// releases the mirror as soon as the old lease ends for any reason. Once
// Close has begun it stops and leaves the mirror to expire.
func (s *shadowed) mirror(opts []distlock.Option) {
	defer s.release()
	l := s.l
	ctx, cancel := context.WithTimeout(s.released, l.opts.ShadowBudget)
	start := time.Now()
	m, err := l.to.Acquire(ctx, s.key, opts...)
	cancel()
	l.record(ShadowEvent{Key: s.key, Op: ShadowAcquire, Latency: time.Since(start), Err: err})
	if err != nil {
		return
	}
	for {
		select {
		case ttl := <-s.extend:
			if err := s.call(ShadowExtend, func(ctx context.Context) error { return m.Extend(ctx, ttl) }); err != nil && m.Err() != nil {
				return // the mirror is gone
			}
		case <-m.Done():
			l.record(ShadowEvent{Key: s.key, Op: ShadowRelease, Err: m.Err()}) // lost on its own
			return
		case <-s.Lease.Done():
			s.call(ShadowRelease, m.Release)
			return
		case <-s.released.Done():
			if !l.lc.Closing().Fired() {
				s.call(ShadowRelease, m.Release)
			}
			return
		}
	}
}

// call runs one mirror call within the budget and records it.
func (s *shadowed) call(op ShadowOp, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(s.l.lc.Closing().Context(), s.l.opts.ShadowBudget)
	defer cancel()
	start := time.Now()
	err := f(ctx)
	s.l.record(ShadowEvent{Key: s.key, Op: op, Latency: time.Since(start), Err: err})
	return err
}

// fences holds the old backend's fence only: the mirror gives no
// exclusion.
func (s *shadowed) fences() fencing.Pair { return fencing.Pair{From: s.Fence()} }

// Extend extends the old backend's lease; on success the mirror is
// extended in the background.
func (s *shadowed) Extend(ctx context.Context, ttl time.Duration) error {
	if err := s.Lease.Extend(ctx, ttl); err != nil {
		return err
	}
	select {
	case <-s.extend: // a newer extension replaces one not mirrored yet
	default:
	}
	select {
	case s.extend <- ttl:
	default:
	}
	return nil
}

// Release releases the old backend's lease and returns its result; the
// mirror is released (or its acquisition cancelled) in the background.
func (s *shadowed) Release(ctx context.Context) error {
	s.release()
	return s.Lease.Release(ctx)
}
