package pgadvisory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/distlock/distlock"
)

// Every request to the server is bounded, whatever the caller's context:
// a server that stops answering (a partition drops packets without a
// reset) would otherwise hold a call until the kernel gives up on the
// connection, minutes later. Options.RequestTimeout bounds each request
// (connecting and setting up a connection count as one); a blocking
// Acquire's wait on the server is not a request (waitwatch.go guards it).
// Close ends the requests of acquisitions in flight at once (callContext);
// the requests of leases, which outlive Close, run to their bound.

// errRequestTimeout marks a request that Options.RequestTimeout ended
// before the caller's context did.
var errRequestTimeout = errors.New("no reply within the request timeout (Options.RequestTimeout)")

// request runs do with ctx bounded by timeout. If the timeout, not ctx,
// ended the request, the error says so and matches errRequestTimeout (and
// no context error: the caller's context is still live).
func request(ctx context.Context, timeout time.Duration, do func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := do(rctx)
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		err = fmt.Errorf("%w: %v (%v)", errRequestTimeout, timeout, err)
	}
	return err
}

// ctxError is ctx's error joined with its cause if that differs.
func ctxError(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || cause == err {
		return err
	}
	return errors.Join(cause, err)
}

// callContext is ctx, also cancelled (cause distlock.ErrClosed) when Close
// begins, for the requests of one acquisition. cancel releases it.
func (l *Locker) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(l.abort.Context(), func() { cancel(distlock.ErrClosed) })
	return cctx, func() {
		stop()
		cancel(nil)
	}
}

// guard returns the context of a heartbeat on the session's connection.
// pgx closes the connection of a request its context interrupts, and
// closing it frees the lock; so the returned context ends only after the
// lease has been reported lost: when ctx ends or the request timeout
// passes. Once the Locker's Close has begun, a cancellation of ctx does
// not end it: Close cancels the watchdog's context, but promises not to
// release the lease, so the heartbeat runs on to its reply or its bound
// (the request timeout, or ctx's deadline if sooner), and Close waits for
// it. done stops the guard and returns why it interrupted the heartbeat,
// or nil.
func (s *session) guard(ctx context.Context) (gctx context.Context, done func() error) {
	gctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	var once sync.Once
	var why error
	interrupt := func(cause error) {
		once.Do(func() {
			why = cause
			s.lose(fmt.Errorf("pgadvisory: heartbeat of %q interrupted (%w); the connection is closed, freeing the lock", s.key, cause))
			cancel(cause)
		})
	}
	timeout := s.l.opts.RequestTimeout
	bound := fmt.Errorf("%w: %v", errRequestTimeout, timeout)
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout, bound = time.Until(dl), context.DeadlineExceeded
	}
	timer := time.AfterFunc(timeout, func() { interrupt(bound) })
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) && s.l.lc.Closed() {
			return // Close stopped the watchdog: the timer still bounds the heartbeat
		}
		interrupt(ctxError(ctx))
	})
	return gctx, func() error {
		timer.Stop()
		stop()
		once.Do(func() {}) // waits for an interrupt under way; none starts after
		cancel(nil)
		return why
	}
}
