package lifecycle

import (
	"context"
	"sync/atomic"
)

// Detach runs f, a request its client cannot cancel, and returns its
// result, or ended(ctx) as soon as ctx ends. When ctx can end, f runs on a
// goroutine of c (Close waits for it) with a context that keeps ctx's
// values but is never cancelled; if the caller leaves first, abandoned
// (if not nil) gets f's result when f returns, to clean up after a request
// that may have taken effect. When ctx cannot end, or once Close has begun
// (Go refuses), f runs on the caller's goroutine with ctx itself.
func Detach[T any](c *Lifecycle, ctx context.Context, f func(context.Context) (T, error), abandoned func(T, error), ended func(context.Context) error) (T, error) {
	if ctx.Done() == nil {
		return f(ctx)
	}
	type result struct {
		v   T
		err error
	}
	const (
		running = iota
		delivered
		left
	)
	var state atomic.Int32
	ch := make(chan result, 1)
	if !c.Go(func() {
		v, err := f(context.WithoutCancel(ctx))
		if state.CompareAndSwap(running, delivered) {
			ch <- result{v, err}
		} else if abandoned != nil {
			abandoned(v, err)
		}
	}) {
		return f(ctx)
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if state.CompareAndSwap(running, left) {
			var zero T
			return zero, ended(ctx)
		}
		r := <-ch
		return r.v, r.err
	}
}
