package leader

import (
	"context"
	"math/rand/v2"
	"time"
)

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
