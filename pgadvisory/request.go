package pgadvisory

import (
	"context"
	"errors"
	"fmt"
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
