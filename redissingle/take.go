package redissingle

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/validity"
)

// acquisition is the outcome of one request that may take a key.
type acquisition struct {
	held  bool   // the key is ours
	fence uint64 // if held
	pttl  int64  // if not held: the holder's remaining TTL in ms (-1: none; <= 0: ask again soon)
}

// take runs s (tryScript, or with an entry the acquire or poll script) for
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
	return l.wrap("acquire", err)
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

// pin returns the scripter for an acquisition of lock and a func to call
// when done. With WaitReplicas it is one connection to the lock's master,
// so that WAIT counts the acquisition's write; otherwise the client.
func (l *Locker) pin(ctx context.Context, lock string) (scripter, func(), error) {
	if l.opts.WaitReplicas == 0 {
		return l.client, func() {}, nil
	}
	var c *redis.Client
	switch cl := l.client.(type) {
	case *redis.Client:
		c = cl
	case *redis.ClusterClient:
		var err error
		if c, err = cl.MasterForKey(ctx, lock); err != nil {
			return nil, nil, err
		}
	}
	conn := c.Conn()
	return conn, func() { _ = conn.Close() }, nil
}

// grant returns the lease of an acquisition whose request was sent after
// start, with the key's TTL set to o.TTL on the server. If its validity
// ran out before the reply was read, lease.Grant releases the key and
// returns an error matching distlock.ErrUnavailable.
func (l *Locker) grant(ctx context.Context, k keySet, key, token string, fence uint64, start time.Time, o distlock.Options) (distlock.Lease, error) {
	ls, err := lease.Grant(ctx, lease.Config{
		Key: key, Token: token, Fence: fence, Start: start,
		ValidUntil: validity.Until(start, o.TTL, validity.DefaultDrift(o.TTL)),
		Options:    o,
		Driver:     &driver{l: l, k: k, token: token},
		Group:      l.lc.Watchdogs(),
	})
	if err != nil {
		return nil, err
	}
	return ls, nil
}
