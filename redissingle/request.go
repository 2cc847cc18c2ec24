package redissingle

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lifecycle"
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

// exec runs one request f and returns its result, or the cause of ctx's
// end as soon as ctx ends. go-redis bounds a request by ctx's deadline
// only with ContextTimeoutEnabled and never by cancellation, so f runs
// detached on a goroutine of l's lifecycle (see lifecycle.Detach) when
// ctx can end; abandoned (if not nil) cleans up after a request the
// caller left, which may have taken effect.
func exec[T any](l *Locker, ctx context.Context, f func(context.Context) (T, error), abandoned func(T, error)) (T, error) {
	return lifecycle.Detach(&l.lc, ctx, f, abandoned, context.Cause)
}
