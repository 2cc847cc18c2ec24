// Package retry is the blocking-acquire loop, its pacing and its
// context-error joining (Ended), shared by the backends: one
// attempt, then a wait that ends early on a push wake-up, with a random
// delay that desynchronises competing clients, until ctx ends.
package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/distlock/distlock"
)

// Delay returns a uniformly random duration in [min, max].
func Delay(min, max time.Duration) time.Duration {
	if max <= min {
		return min
	}
	return min + rand.N(max-min+1)
}

// Attempt makes one acquisition attempt. It returns an error matching
// distlock.ErrNotAcquired when the key is held by someone else; an error
// matching distlock.ErrUnavailable when the backend could not be reached
// (the loop tries again); any other error ends the loop.
type Attempt func(ctx context.Context) (distlock.Lease, error)

// Subscribe registers interest in wake-ups for the key before an attempt
// is made, so a release between the attempt and the wait is not missed. It
// returns a channel that receives (or closes) on a wake-up and a cancel
// func; a nil Subscribe means polling only.
type Subscribe func(ctx context.Context) (wake <-chan struct{}, cancel func())

// Acquire runs attempts until one succeeds, a non-retryable error occurs,
// or ctx ends, waiting between attempts for a wake-up or a random delay in
// [opts.RetryMin, opts.RetryMax]. When ctx ends, the error matches
// distlock.ErrNotAcquired and ctx.Err(), joined with the last attempt's
// error.
func Acquire(ctx context.Context, opts distlock.Options, attempt Attempt, subscribe Subscribe) (distlock.Lease, error) {
	return loop(ctx, func() time.Duration { return Delay(opts.RetryMin, opts.RetryMax) }, attempt, subscribe)
}

// AcquirePushOnly is Acquire for backends whose wake-ups cannot be missed
// (their Subscribe channel also fires on expiry and on any fallback timer
// the backend arms): between attempts it waits only for the wake-up or for
// ctx, never polls.
func AcquirePushOnly(ctx context.Context, attempt Attempt, subscribe Subscribe) (distlock.Lease, error) {
	return loop(ctx, nil, attempt, subscribe)
}

// loop is the attempt-wait cycle; delay nil means wait for wake-ups only.
func loop(ctx context.Context, delay func() time.Duration, attempt Attempt, subscribe Subscribe) (distlock.Lease, error) {
	var last error
	for {
		if err := ctx.Err(); err != nil {
			return nil, errors.Join(distlock.ErrNotAcquired, err, last)
		}
		var wake <-chan struct{}
		cancel := func() {}
		if subscribe != nil {
			wake, cancel = subscribe(ctx)
		}
		l, err := attempt(ctx)
		if err == nil {
			cancel()
			return l, nil
		}
		if !errors.Is(err, distlock.ErrNotAcquired) && !errors.Is(err, distlock.ErrUnavailable) {
			cancel()
			if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
				return nil, errors.Join(distlock.ErrNotAcquired, cerr, err)
			}
			return nil, err
		}
		if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
			last = err
		}
		var d time.Duration
		if delay != nil {
			d = delay()
		}
		err = Wait(ctx, d, wake)
		cancel()
		if err != nil {
			return nil, errors.Join(distlock.ErrNotAcquired, err, last)
		}
	}
}

// Wait sleeps for d (forever if d <= 0), or until wake fires, or until ctx
// ends (then it returns ctx.Err()).
func Wait(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timeout:
	case <-wake:
	}
	return nil
}
