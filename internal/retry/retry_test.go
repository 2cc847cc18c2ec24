package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/retry"
)

// TestDelayWithinBounds: Delay stays in [min, max].
func TestDelayWithinBounds(t *testing.T) {
	for i := 0; i < 1000; i++ {
		if d := retry.Delay(5, 9); d < 5 || d > 9 {
			t.Fatalf("delay %v", d)
		}
	}
}

// never is a Subscribe whose wake-up never comes.
func never(context.Context) (<-chan struct{}, func()) { return nil, func() {} }

// TestAcquireKeepsLastErrorAndContext: when ctx ends during the wait, the
// error matches ErrNotAcquired, ctx's error and the last attempt's error.
func TestAcquireKeepsLastErrorAndContext(t *testing.T) {
	backend := errors.New("node 3 refused")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := retry.Acquire(ctx, func(context.Context) (distlock.Lease, error) {
		return nil, errors.Join(distlock.ErrUnavailable, backend)
	}, never)
	if !errors.Is(err, distlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, backend) {
		t.Fatalf("got %v", err)
	}
}

// TestAcquireStopsOnFatalError: an error that is neither contention nor
// outage ends the loop after one attempt, unchanged.
func TestAcquireStopsOnFatalError(t *testing.T) {
	calls := 0
	_, err := retry.Acquire(context.Background(), func(context.Context) (distlock.Lease, error) {
		calls++
		return nil, distlock.ErrClosed
	}, never)
	if !errors.Is(err, distlock.ErrClosed) || calls != 1 {
		t.Fatalf("calls %d err %v", calls, err)
	}
}

// TestAcquireStopsOnRefusal: ErrAccessDenied and ErrTLS, which match
// ErrUnavailable but which no retry fixes, end the loop after one attempt.
func TestAcquireStopsOnRefusal(t *testing.T) {
	for _, sentinel := range []error{distlock.ErrAccessDenied, distlock.ErrTLS} {
		calls := 0
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := retry.Acquire(ctx, func(context.Context) (distlock.Lease, error) {
			calls++
			return nil, fmt.Errorf("%w: backend: refused", sentinel)
		}, func(context.Context) (<-chan struct{}, func()) {
			ch := make(chan struct{})
			close(ch) // an immediate wake-up: a retry would come at once
			return ch, func() {}
		})
		cancel()
		if !errors.Is(err, sentinel) || errors.Is(err, distlock.ErrNotAcquired) || calls != 1 {
			t.Fatalf("%v: calls %d err %v", sentinel, calls, err)
		}
	}
}

// TestWakeCutsTheWait: a wake-up starts the next attempt at once.
func TestWakeCutsTheWait(t *testing.T) {
	calls := 0
	_, err := retry.Acquire(context.Background(), func(context.Context) (distlock.Lease, error) {
		calls++
		if calls == 3 {
			return nil, errors.New("stop")
		}
		return nil, distlock.ErrNotAcquired
	}, func(context.Context) (<-chan struct{}, func()) {
		ch := make(chan struct{})
		close(ch) // an immediate wake-up
		return ch, func() {}
	})
	if err == nil || calls != 3 {
		t.Fatalf("calls %d: %v", calls, err)
	}
}

// TestFatalErrorAfterContextEndedKeepsBoth: an attempt that fails with an
// error that is neither contention nor outage after ctx has ended still
// reports ErrNotAcquired and ctx.Err(), as every wait that ctx ends must.
func TestFatalErrorAfterContextEndedKeepsBoth(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	odd := errors.New("protocol error")
	_, err := retry.Acquire(ctx, func(context.Context) (distlock.Lease, error) {
		cancel()
		return nil, odd
	}, never)
	if !errors.Is(err, distlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) || !errors.Is(err, odd) {
		t.Fatalf("got %v", err)
	}
}
