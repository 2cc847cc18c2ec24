package redissingle

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// scripter is what the scripts run on: the client, or one pinned
// connection when WAIT must follow on the same connection.
type scripter interface {
	redis.Scripter
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// ms renders d in whole milliseconds for PX/PEXPIRE, rounded up, so the
// key lives at least as long as the validity computed from d.
func ms(d time.Duration) int64 { return max(int64((d+time.Millisecond-1)/time.Millisecond), 1) }

// runInt runs script s over keys and returns its integer reply.
func (l *Locker) runInt(ctx context.Context, c scripter, s *redis.Script, keys []string, args ...any) (int64, error) {
	if ctx.Done() == nil { // ctx never ends: no goroutine needed (exec's first case, without the closure)
		return s.Run(ctx, c, keys, args...).Int64()
	}
	return exec(l, ctx, func(ctx context.Context) (int64, error) {
		return s.Run(ctx, c, keys, args...).Int64()
	}, nil)
}

// exec runs one request f and returns its result, or the error of ctx as
// soon as ctx ends. go-redis bounds a request by ctx's deadline only with
// ContextTimeoutEnabled and never by cancellation, so f runs on a
// goroutine of l's lifecycle (Close waits for it) when ctx can end. If the
// caller leaves first, abandoned (if not nil) is called with f's result
// when f returns, to clean up after a request that may have taken effect.
// On a closed Locker (a lease released after Close), f runs on the
// caller's goroutine.
func exec[T any](l *Locker, ctx context.Context, f func(context.Context) (T, error), abandoned func(T, error)) (T, error) {
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
	started := l.lc.Go(func() {
		v, err := f(context.WithoutCancel(ctx))
		if state.CompareAndSwap(running, delivered) {
			ch <- result{v, err}
		} else if abandoned != nil {
			abandoned(v, err)
		}
	})
	if !started {
		return f(ctx)
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if state.CompareAndSwap(running, left) {
			var zero T
			return zero, context.Cause(ctx)
		}
		r := <-ch
		return r.v, r.err
	}
}
