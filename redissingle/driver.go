package redissingle

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/validity"
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

// driver is the lease.Driver of one held key.
type driver struct {
	l     *Locker
	k     keySet
	token string
}

// Extend implements lease.Driver with a compare-and-PEXPIRE that never
// re-creates the key.
func (d *driver) Extend(ctx context.Context, ttl time.Duration) (time.Time, error) {
	start := time.Now()
	ok, err := d.l.extend(ctx, d.l.client, d.k, d.token, ttl)
	if err != nil {
		return time.Time{}, err
	}
	if !ok {
		return time.Time{}, fmt.Errorf("%w: redissingle: key %q is no longer ours", distlock.ErrLeaseLost, d.k.lock)
	}
	return validity.Until(start, ttl, validity.DefaultDrift(ttl)), nil
}

// Release implements lease.Driver: compare-and-delete, or a hand-off to
// the first waiter.
func (d *driver) Release(ctx context.Context) error {
	r, err := d.l.runInt(ctx, d.l.client, d.l.scripts.release, d.k.all(), d.token)
	if err != nil {
		return wrap("release", err)
	}
	if r == 0 {
		return fmt.Errorf("%w: redissingle: key %q is no longer ours", distlock.ErrLeaseLost, d.k.lock)
	}
	return nil
}

// extend runs extendScript on c and reports whether the key was ours.
func (l *Locker) extend(ctx context.Context, c scripter, k keySet, token string, ttl time.Duration) (bool, error) {
	r, err := l.runInt(ctx, c, extendScript, []string{k.lock}, token, ms(ttl))
	if err != nil {
		return false, wrap("extend", err)
	}
	return r == 1, nil
}
