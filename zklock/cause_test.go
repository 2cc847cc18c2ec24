package zklock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// errGaveUp is the cause the tests give their contexts.
var errGaveUp = errors.New("the caller gave up")

// testCauseContexts: a context made with WithCancelCause or
// WithTimeoutCause ends a queued Acquire, or a TryAcquire, with an error
// that matches distlock.ErrNotAcquired, ctx.Err() and the cause, and
// leaves no node behind.
func testCauseContexts(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	const ttl = 5 * time.Second
	a, b := e.locker(t, "a", nil), e.locker(t, "b", nil)
	held := mustAcquire(t, a, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))
	defer mustRelease(t, held)
	queueEmpties := func(t *testing.T) {
		t.Helper()
		eventually(t, 5*time.Second, "the waiter's node stayed", func() bool { return len(e.lockNodes(t, key)) == 1 })
	}

	t.Run("WithCancelCause", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		go func() {
			deadline := time.Now().Add(10 * time.Second)
			for len(e.lockNodes(t, key)) < 2 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			cancel(errGaveUp) // queued by now, or the test fails below
		}()
		start := time.Now()
		_, err := b.Acquire(ctx, key, distlock.WithTTL(ttl))
		if time.Since(start) > 9*time.Second {
			t.Fatalf("the waiter never queued: %v", err)
		}
		wantErr(t, err, distlock.ErrNotAcquired, context.Canceled, errGaveUp)
		queueEmpties(t)
	})

	t.Run("WithTimeoutCause", func(t *testing.T) {
		ctx, cancel := context.WithTimeoutCause(context.Background(), time.Second, errGaveUp)
		defer cancel()
		_, err := b.Acquire(ctx, key, distlock.WithTTL(ttl))
		wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded, errGaveUp)
		queueEmpties(t)
	})

	t.Run("TryAcquireEnded", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(errGaveUp)
		_, err := b.TryAcquire(ctx, key, distlock.WithTTL(ttl))
		wantErr(t, err, distlock.ErrNotAcquired, context.Canceled, errGaveUp)
		ctx, cancel2 := context.WithTimeoutCause(context.Background(), -time.Second, errGaveUp)
		defer cancel2()
		_, err = b.Acquire(ctx, key, distlock.WithTTL(ttl))
		wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded, errGaveUp)
	})
}
