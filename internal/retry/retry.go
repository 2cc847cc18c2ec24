// Package retry is the blocking-acquire loop and its parts, shared by the
// backends: Acquire (attempt, then wait for a push wake-up, until ctx
// ends), used by memlock, redissingle and redlock; Wait, Delay (a random
// delay that desynchronises competing clients) and Ended (a context's end
// joined with the last error), from which pgadvisory, etcdlock and zklock
// build the loops their servers need; and Backoff, the pacing of
// background reconnects.
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
// func.
type Subscribe func(ctx context.Context) (wake <-chan struct{}, cancel func())

// Acquire runs attempts until one succeeds, a non-retryable error occurs,
// or ctx ends; between attempts it waits for the wake-up subscribe arms
// (subscribe must not be nil) and never polls, so it suits backends whose wake-ups
// cannot be missed (their channel also fires on expiry and on any fallback
// timer the backend arms). Errors matching distlock.ErrNotAcquired or
// distlock.ErrUnavailable are retried, except distlock.ErrAccessDenied
// and distlock.ErrTLS, which no retry fixes; any other error ends the
// loop. When ctx ends, the error matches distlock.ErrNotAcquired and
// ctx.Err(), joined with the last attempt's error (see Ended).
//
// Backends whose waits differ (an error that matches ErrUnavailable but
// must end the wait, a retry only before queueing on the server) write
// their own loop from Wait, Delay and Ended.
func Acquire(ctx context.Context, attempt Attempt, subscribe Subscribe) (distlock.Lease, error) {
	var last error
	for {
		if err := Ended(ctx, last); err != nil {
			return nil, err
		}
		wake, cancel := subscribe(ctx)
		l, err := attempt(ctx)
		if err == nil {
			cancel()
			return l, nil
		}
		if !errors.Is(err, distlock.ErrNotAcquired) && !errors.Is(err, distlock.ErrUnavailable) ||
			errors.Is(err, distlock.ErrAccessDenied) || errors.Is(err, distlock.ErrTLS) {
			cancel()
			if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
				return nil, Ended(ctx, err)
			}
			return nil, err
		}
		if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
			last = err
		}
		_ = Wait(ctx, 0, wake) // a ctx that ended is reported at the top
		cancel()
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
