package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/retry"
)

// Acquire waits until the key is held in the Locker's phase or ctx ends.
// PhaseFrom and PhaseTo wait on one backend. PhaseShadow waits on the old
// backend only and returns as soon as it holds the key there. PhaseBoth
// waits on the old backend, then on the new one while holding the old
// one's lock, each with its own wake-ups; if the old lease ends during
// that second wait, or its validity at the start of the wait passes
// (about one TTL, even when it is extended automatically), it releases
// what it holds and starts over after a retry delay (the call's
// WithRetryDelay, else distlock.DefaultRetryMin to DefaultRetryMax), so
// a waiter never keeps the old lock for long while the new one is busy.
// Errors are those of distlock.Locker.Acquire: ErrNotAcquired with
// ctx.Err() when ctx ends, ErrInvalidArgument, ErrClosed (also when Close
// begins during the wait), and the backends' own.
func (l *Locker) Acquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	return l.acquire(ctx, key, false, opts)
}

// TryAcquire makes one attempt on each backend the phase locks on:
// PhaseBoth tries the old backend, then the new one, and releases the
// old backend's lease if the new one is held elsewhere (ErrNotAcquired)
// or cannot be reached (ErrUnavailable).
func (l *Locker) TryAcquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	return l.acquire(ctx, key, true, opts)
}

func (l *Locker) acquire(ctx context.Context, key string, try bool, opts []distlock.Option) (distlock.Lease, error) {
	if !l.lc.Enter() {
		return nil, distlock.ErrClosed
	}
	defer l.lc.Leave()
	// One attempt with the caller's own context first: an uncontended key
	// costs what the backends alone cost (a context that Close can cancel
	// sends some backends' requests through a goroutine of their own).
	// One attempt is bounded, so Close may wait for it.
	lease, err := l.acquirePhase(ctx, key, true, opts)
	switch {
	case try || err == nil || !(errors.Is(err, distlock.ErrNotAcquired) || errors.Is(err, distlock.ErrUnavailable)):
		return lease, err
	case ctx.Err() != nil:
		return nil, retry.Ended(ctx, err)
	}
	// The wait: backend calls end when Close begins; the backends stay
	// open until every call has returned and cleaned up.
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(l.lc.Closing().Context(), func() { cancel(distlock.ErrClosed) })
	defer stop()
	lease, err = l.acquirePhase(cctx, key, false, opts)
	if err != nil && ctx.Err() == nil && l.lc.Closing().Fired() {
		return nil, fmt.Errorf("%w: Close began during the acquisition", distlock.ErrClosed)
	}
	return lease, err
}

func (l *Locker) acquirePhase(ctx context.Context, key string, try bool, opts []distlock.Option) (distlock.Lease, error) {
	switch l.opts.Phase {
	case PhaseFrom:
		a, err := take(ctx, l.from, key, try, opts)
		return wrapSingle(a, true), err
	case PhaseTo:
		b, err := take(ctx, l.to, key, try, opts)
		return wrapSingle(b, false), err
	case PhaseShadow:
		a, err := take(ctx, l.from, key, try, opts)
		if err != nil {
			return nil, err
		}
		return l.startShadow(a, key, opts), nil
	default:
		return l.acquireBoth(ctx, key, try, opts)
	}
}

// take acquires key on one backend.
func take(ctx context.Context, lk distlock.Locker, key string, try bool, opts []distlock.Option) (distlock.Lease, error) {
	if try {
		return lk.TryAcquire(ctx, key, opts...)
	}
	return lk.Acquire(ctx, key, opts...)
}

// acquireBoth takes the old backend's lock, then the new one's, in that
// fixed order (two PhaseBoth clients cannot deadlock).
func (l *Locker) acquireBoth(ctx context.Context, key string, try bool, opts []distlock.Option) (distlock.Lease, error) {
	for {
		a, err := take(ctx, l.from, key, try, opts)
		if err != nil {
			return nil, err
		}
		b, err := l.takeSecond(ctx, a, key, try, opts)
		if err == nil {
			if lease, ok := l.newBoth(a, b); ok {
				return lease, nil
			}
			l.cleanup(b)
			l.cleanup(a)
			return nil, distlock.ErrClosed
		}
		l.cleanup(a)
		switch {
		case !errors.Is(err, errFirstLost):
			return nil, err
		case try:
			return nil, fmt.Errorf("%w: %w", distlock.ErrNotAcquired, err)
		}
		// Let a waiter queued on the old lock in first.
		o, _ := distlock.DefaultOptions().Resolve(opts...)
		if retry.Wait(ctx, retry.Delay(o.RetryMin, o.RetryMax), nil) != nil {
			return nil, retry.Ended(ctx, nil)
		}
	}
}

// takeSecond acquires key on the new backend while a, the old backend's
// lease, is held: the wait ends when ctx ends, when a ends, or when a's
// validity passes. errFirstLost says a ended (or has no validity left
// once b is granted) while ctx still runs.
func (l *Locker) takeSecond(ctx context.Context, a distlock.Lease, key string, try bool, opts []distlock.Option) (distlock.Lease, error) {
	wctx, cancel := context.WithDeadline(ctx, a.ValidUntil())
	defer cancel()
	watched := make(chan struct{})
	go func() { // joined below: it exits when wctx ends, which cancel ensures
		defer close(watched)
		select {
		case <-a.Done():
			cancel()
		case <-wctx.Done():
		}
	}()
	began := time.Now()
	b, err := take(wctx, l.to, key, try, opts)
	cut := err != nil && wctx.Err() != nil && ctx.Err() == nil // our bound ended the wait
	cancel()
	<-watched
	firstOK := a.Err() == nil && time.Now().Before(a.ValidUntil())
	switch {
	case err == nil && firstOK:
	case err == nil:
		l.cleanup(b)
		b, err = nil, errFirstLost
	case ctx.Err() != nil:
		err = retry.Ended(ctx, nil)
	case cut || !firstOK: // the inner error says only that our bound passed
		err = errFirstLost
	}
	l.recordWait(time.Since(began), errors.Is(err, errFirstLost))
	return b, err
}

// cleanup releases a lease the caller will not get, bounded by
// CleanupTimeout whatever the caller's context or Close.
func (l *Locker) cleanup(lease distlock.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.CleanupTimeout)
	defer cancel()
	_ = lease.Release(ctx)
}
