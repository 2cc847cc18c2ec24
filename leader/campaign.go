package leader

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/distlock/distlock"
)

// Run campaigns until ctx ends: it waits to acquire the election key,
// runs the work for the term, releases the key when the work returns, and
// campaigns again after the backoff (WithBackoff) or, after Resign, the
// resign delay (WithResignDelay). A campaign that fails with a backend
// error (distlock.ErrUnavailable, for instance) is retried after the
// backoff too.
//
// Run returns only when it cannot go on, with a non-nil error:
//   - ctx ended: the error matches distlock.ErrNotAcquired and ctx.Err()
//     (and context.Cause(ctx)), whether Run was leading or campaigning at
//     that moment; a term in progress was ended first (the work's context
//     cancelled, the work returned, the key released);
//   - the Locker was closed: distlock.ErrClosed;
//   - the lock options are invalid: distlock.ErrInvalidArgument;
//   - another Run of this Candidate is in progress:
//     distlock.ErrInvalidArgument.
//
// The work's own errors do not end Run: they are reported to the observer
// (SteppedDown's Err). A panic in the work goes on after the key is
// released. Run leaves no goroutine behind.
func (c *Candidate) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: leader %q: Run is already in progress", distlock.ErrInvalidArgument, c.key)
	}
	defer c.running.Store(false)
	b := backoff{min: c.cfg.backoffMin, max: c.cfg.backoffMax}
	for {
		r := c.campaign(ctx)
		if ctx.Err() != nil {
			return c.stopped(ctx)
		}
		if !r.elected && (errors.Is(r.err, distlock.ErrClosed) || errors.Is(r.err, distlock.ErrInvalidArgument)) {
			return fmt.Errorf("leader %q: campaign: %w", c.key, r.err)
		}
		var d time.Duration
		switch {
		case r.resigned:
			b.reset()
			d = c.cfg.resignDelay
		case r.elected && r.lasted >= c.cfg.backoffMax:
			b.reset()
			d = b.next()
		default:
			d = b.next()
		}
		if !sleep(ctx, d) {
			return c.stopped(ctx)
		}
	}
}

// stopped is Run's error once ctx has ended.
func (c *Candidate) stopped(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if !errors.Is(cause, err) {
		err = errors.Join(err, cause)
	}
	return fmt.Errorf("%w: leader %q: campaign ended: %w", distlock.ErrNotAcquired, c.key, err)
}

// backoff is the delay before campaigning again: it starts at min,
// doubles after each consecutive end up to max, and each wait is drawn
// from the upper half of the current delay, so candidates that fail
// together do not campaign again in step.
type backoff struct {
	min, max time.Duration
	cur      time.Duration // the next delay before jitter; 0 means min
}

// next returns the jittered delay to wait now and doubles the next one.
func (b *backoff) next() time.Duration {
	if b.cur < b.min {
		b.cur = b.min
	}
	d := b.cur
	b.cur = min(b.max, 2*b.cur)
	half := d / 2
	return d - half + rand.N(half+1)
}

// reset starts the delays again from min.
func (b *backoff) reset() { b.cur = 0 }

// sleep waits for d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
