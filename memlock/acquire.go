package memlock

import (
	"context"
	"fmt"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/retry"
	"github.com/distlock/distlock/internal/validity"
)

// TryAcquire makes one attempt at key. A key held by someone else returns
// an error matching distlock.ErrNotAcquired, as does a context already
// ended (joined with its error). An empty key or an invalid option returns
// an error matching distlock.ErrInvalidArgument; a closed Locker returns
// distlock.ErrClosed.
func (l *Locker) TryAcquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	return l.call(key, opts, func(o distlock.Options) (distlock.Lease, error) {
		if err := retry.Ended(ctx, nil); err != nil {
			return nil, err
		}
		return l.try(key, o)
	})
}

// Acquire waits until key is held by the caller. Waiters queue on the key
// and are woken one at a time by its release, expiry or revocation, or all
// at once by Close; they never poll, so WithRetryDelay has no effect here.
// When ctx ends first, the error matches distlock.ErrNotAcquired and
// ctx.Err(). An empty key or an invalid option returns an error matching
// distlock.ErrInvalidArgument; a Locker closed before or during the wait
// returns distlock.ErrClosed.
func (l *Locker) Acquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	return l.call(key, opts, func(o distlock.Options) (distlock.Lease, error) {
		return retry.Acquire(ctx,
			func(context.Context) (distlock.Lease, error) {
				if l.lc.Closed() {
					return nil, distlock.ErrClosed
				}
				return l.try(key, o)
			},
			func(context.Context) (<-chan struct{}, func()) { return l.space.subscribe(key) })
	})
}

// call runs f with the call's resolved options as a call in flight, which
// Close waits for. A closed Locker returns distlock.ErrClosed, an empty key
// or invalid options an error matching distlock.ErrInvalidArgument.
func (l *Locker) call(key string, opts []distlock.Option, f func(distlock.Options) (distlock.Lease, error)) (distlock.Lease, error) {
	if !l.lc.Enter() {
		return nil, distlock.ErrClosed
	}
	defer l.lc.Leave()
	o, err := l.defaults.ResolveFor(key, opts...)
	if err != nil {
		return nil, err
	}
	return f(o)
}

// try grants key to this Locker if it is free (or its holder's TTL has
// passed), minting the next fence of the space and arming the key's expiry
// timer.
func (l *Locker) try(key string, o distlock.Options) (distlock.Lease, error) {
	s := l.space
	start := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entryLocked(key)
	if e.held(start) {
		return nil, fmt.Errorf("%w: key %q is held", distlock.ErrNotAcquired, key)
	}
	if e.token != "" { // expired but its timer has not run yet
		s.freeLocked(key, e, errExpired)
		s.keys[key] = e
	}
	s.fence++
	token := lease.NewToken()
	e.token, e.fence, e.label, e.expires = token, s.fence, o.Label, start.Add(o.TTL)
	e.timer = time.AfterFunc(o.TTL, func() { s.expire(key, token) })
	e.lease = lease.New(lease.Config{ // validity cannot run out under the space lock
		Key: key, Token: token, Fence: s.fence, Start: start,
		ValidUntil: validity.Until(start, o.TTL, validity.DefaultDrift(o.TTL)),
		Options:    o,
		Driver:     driver{s: s, key: key, token: token},
		Group:      l.lc.Watchdogs(),
	})
	return e.lease, nil
}
