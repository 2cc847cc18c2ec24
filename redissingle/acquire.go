package redissingle

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/retry"
)

// cleanupTimeout is the deadline of each clean-up request.
const cleanupTimeout = time.Second

// acquisition is the outcome of one request that may take a key.
type acquisition struct {
	held  bool   // the key is ours
	fence uint64 // if held
	pttl  int64  // if not held: the holder's remaining TTL in ms (-1: none; <= 0: ask again soon)
}

// take runs s (tryScript, or with an entry acquireLua or pollLua) for
// token, then WAIT if Options.WaitReplicas is set. If ctx ends first, the
// request goes on and is cleaned up when it returns.
func (l *Locker) take(ctx context.Context, k keySet, s *redis.Script, token, entry string, ttl time.Duration) (acquisition, error) {
	keys, args := k.all(), []any{token, ms(ttl)}
	if entry != "" {
		args = append(args, entry, l.qttl)
	}
	run := func(ctx context.Context, c scripter) (acquisition, error) {
		r, err := s.Run(ctx, c, keys, args...).Int64()
		switch {
		case err != nil:
			return acquisition{}, err
		case r > 0:
			return acquisition{held: true, fence: uint64(r)}, nil
		}
		return acquisition{pttl: -r - 3}, nil
	}
	if ctx.Done() == nil && l.opts.WaitReplicas == 0 { // the common path, without closures
		a, err := run(ctx, l.client)
		return a, l.wrapTake(err)
	}
	a, err := exec(l, ctx, func(ctx context.Context) (acquisition, error) {
		return l.replicated(ctx, k, token, ttl, func(c scripter) (acquisition, error) { return run(ctx, c) })
	}, func(acquisition, error) { l.cleanup(k, token, entry, ttl) })
	return a, l.wrapTake(err)
}

// confirm re-arms a key handed to token with fence (compare-and-PEXPIRE
// on the whole value "token:fence"), then WAITs if Options.WaitReplicas is
// set. It returns held false if the key no longer carries that value:
// gone, someone else's, or handed to token again since, with a newer
// fence (a stale notification must not grant the older fence).
func (l *Locker) confirm(ctx context.Context, k keySet, token string, fence uint64, ttl time.Duration) (bool, error) {
	value := token + ":" + strconv.FormatUint(fence, 10)
	a, err := exec(l, ctx, func(ctx context.Context) (acquisition, error) {
		return l.replicated(ctx, k, token, ttl, func(c scripter) (acquisition, error) {
			n, err := extendScript.Run(ctx, c, []string{k.lock}, value, ms(ttl)).Int64()
			return acquisition{held: n == 1}, err
		})
	}, func(acquisition, error) { l.cleanup(k, token, "", ttl) })
	return a.held, l.wrapTake(err)
}

func (l *Locker) wrapTake(err error) error {
	var re *ReplicationError
	if err == nil || errors.As(err, &re) {
		return err
	}
	return wrap("acquire", err)
}

// replicated runs f on the connection WAIT must use (see pin) and, if f
// took the key and Options.WaitReplicas is set, waits for the replicas. If
// too few acknowledge, it releases the key and returns a
// *ReplicationError.
func (l *Locker) replicated(ctx context.Context, k keySet, token string, ttl time.Duration, f func(scripter) (acquisition, error)) (acquisition, error) {
	c, done, err := l.pin(ctx, k.lock)
	if err != nil {
		return acquisition{}, err
	}
	defer done()
	a, err := f(c)
	if err != nil || !a.held || l.opts.WaitReplicas == 0 {
		return a, err
	}
	acked, err := c.Do(ctx, "WAIT", l.opts.WaitReplicas, l.opts.WaitTimeout.Milliseconds()).Int64()
	if err == nil && acked >= int64(l.opts.WaitReplicas) {
		return a, nil
	}
	if rerr := l.scripts.release.Run(ctx, c, k.all(), token).Err(); rerr != nil {
		l.cleanup(k, token, "", ttl)
	}
	if err != nil {
		return acquisition{}, err
	}
	return acquisition{}, &ReplicationError{Acked: int(acked), Want: l.opts.WaitReplicas}
}

// cleanup removes entry from k's queue and releases k if token holds it
// (cancelLua), on a goroutine of l's lifecycle: at once, then with backoff
// while the server is unavailable, until it succeeds, the Locker closes,
// or ttl has passed (a key we might hold has expired by then). Each try is
// bounded by cleanupTimeout if the client honours context deadlines
// (ContextTimeoutEnabled), else by its read timeout. Once Close has begun,
// it makes its one try on the caller's goroutine, which Close waits for
// (every caller is a call or goroutine of the lifecycle), so that Close
// returns after the clean-up of every waiter it woke.
func (l *Locker) cleanup(k keySet, token, entry string, ttl time.Duration) {
	l.cleanupThen(k, token, entry, ttl, nil)
}

// cleanupThen is cleanup, calling done (if not nil) once the script has
// run.
func (l *Locker) cleanupThen(k keySet, token, entry string, ttl time.Duration, done func()) {
	run := func() {
		until := time.Now().Add(ttl)
		b := retry.Backoff{Min: 20 * time.Millisecond, Max: time.Second}
		for {
			ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			err := l.scripts.cancel.Run(ctx, l.client, k.all(), token, entry).Err()
			cancel()
			if err == nil && done != nil {
				done()
			}
			if err == nil || !errors.Is(wrap("clean-up", err), distlock.ErrUnavailable) || time.Now().Add(b.Next()).After(until) {
				return
			}
			if !b.Wait(l.lc.Closing().Done()) {
				return
			}
		}
	}
	if !l.lc.Go(run) {
		run()
	}
}

// tryOnce is TryAcquire's attempt: the key if it is free.
func (l *Locker) tryOnce(ctx context.Context, k keySet, key string, o distlock.Options) (distlock.Lease, error) {
	token := lease.NewToken()
	start := time.Now()
	a, err := l.take(ctx, k, tryScript, token, "", o.TTL)
	if err != nil {
		if errors.Is(err, errUnknown) {
			l.cleanup(k, token, "", o.TTL)
		}
		return nil, err
	}
	if !a.held {
		return nil, fmt.Errorf("%w: key %q is held", distlock.ErrNotAcquired, key)
	}
	return l.grant(ctx, k, key, token, a.fence, start, o)
}
