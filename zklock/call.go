package zklock

import (
	"context"
	"sync/atomic"
)

// call runs one go-zookeeper request f, which has no context, and returns
// its result, or ctx's error (ctxErr) as soon as ctx ends. When ctx can end, f runs
// on its own goroutine (owned by l, joined by Close); if the caller leaves
// first, abandoned (if not nil) gets f's result when f returns, to clean
// up after a request that may have taken effect. A request returns at the
// latest when go-zookeeper gives the connection up (two thirds of the
// session timeout without a byte from the server) or the Locker closes.
// Without a Done channel, or on a closed Locker, f runs on the caller's
// goroutine.
func call[T any](l *Locker, ctx context.Context, f func() (T, error), abandoned func(T, error)) (T, error) {
	if ctx.Done() == nil {
		return f()
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
	if !l.lc.Go(func() {
		v, err := f()
		if state.CompareAndSwap(running, delivered) {
			ch <- result{v, err}
		} else if abandoned != nil {
			abandoned(v, err)
		}
	}) {
		return f()
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if state.CompareAndSwap(running, left) {
			var zero T
			return zero, ctxErr(ctx)
		}
		r := <-ch
		return r.v, r.err
	}
}
