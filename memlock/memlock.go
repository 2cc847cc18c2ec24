// Package memlock is the in-process backend: full lease semantics (TTL
// expiry, fences, lost-lease notification, blocking waits woken by the
// release itself) inside one process. It is the embedded default, the
// backend of the README example and of the conformance suite's fast
// self-test. Scheme "mem://" (the default space) or "mem://NAME" (a named
// space); every Locker opened on the same space contends on the same keys.
package memlock

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/retry"
	"github.com/distlock/distlock/internal/urlopt"
	"github.com/distlock/distlock/internal/validity"
)

var (
	errExpired = errors.New("memlock: key expired")
	errRevoked = errors.New("memlock: key revoked")
)

func init() {
	distlock.Register("mem", func(_ context.Context, u *url.URL) (distlock.Locker, error) {
		p := urlopt.New(u)
		opts := p.LockOptions()
		if err := p.Done(); err != nil {
			return nil, err
		}
		if u.Path != "" && u.Path != "/" {
			return nil, fmt.Errorf("%w: mem URL takes a name as host (mem://NAME), not a path", distlock.ErrInvalidArgument)
		}
		return &Locker{space: sharedSpace(u.Host), defaults: opts}, nil
	})
}

// Locker is a client handle on an in-process lock space.
type Locker struct {
	space     *space
	defaults  distlock.Options
	closed    atomic.Bool
	watchdogs lease.Group // of this handle's leases; stopped by Close
}

var _ distlock.Locker = (*Locker)(nil)

// New returns a Locker on a new private space. opts are the default
// per-call options; nil or zero fields take distlock.DefaultOptions. Use
// NewHandle to open more clients on the same space.
func New(opts *distlock.Options) *Locker {
	var d distlock.Options
	if opts != nil {
		d = *opts
	}
	return &Locker{space: newSpace(), defaults: d.WithDefaults()}
}

// NewHandle returns another client on l's space, with its own Close.
func (l *Locker) NewHandle() *Locker {
	return &Locker{space: l.space, defaults: l.defaults}
}

// Guarantees: one process, one clock, no servers to lose. Leases end at
// their TTL like every TTL-based backend's, so a holder goroutine that
// stalls past its TTL overlaps the next holder (ClockIndependentSafety
// false): check Done or ValidUntil, or use the fence.
func (l *Locker) Guarantees() distlock.Guarantees {
	return distlock.Guarantees{
		Backend:          "mem",
		Fence:            distlock.FenceMonotonic,
		FenceScope:       "space (one counter per process-wide space)",
		PushWakeup:       true,
		LostNotification: true,
	}
}

// Close makes further calls return ErrClosed, wakes the blocked Acquire
// calls (those of this handle return ErrClosed; waiters of other handles
// on the space look again and wait on), and stops and joins the watchdogs
// of this handle's leases. Held leases stay until released or expired.
func (l *Locker) Close() error {
	if l.closed.CompareAndSwap(false, true) {
		l.space.wakeAll()
	}
	l.watchdogs.Close()
	return nil
}

func (l *Locker) check(key string, opts []distlock.Option) (distlock.Options, error) {
	if l.closed.Load() {
		return distlock.Options{}, distlock.ErrClosed
	}
	return l.defaults.ResolveFor(key, opts...)
}

// TryAcquire implements distlock.Locker.
func (l *Locker) TryAcquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.check(key, opts)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, errors.Join(distlock.ErrNotAcquired, err)
	}
	return l.try(key, o)
}

// Acquire implements distlock.Locker. Waiters are woken one at a time by
// the release, expiry or revocation of the key, or by Close; they never
// poll, so WithRetryDelay has no effect here.
func (l *Locker) Acquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.check(key, opts)
	if err != nil {
		return nil, err
	}
	return retry.AcquirePushOnly(ctx,
		func(context.Context) (distlock.Lease, error) {
			if l.closed.Load() {
				return nil, distlock.ErrClosed
			}
			return l.try(key, o)
		},
		func(context.Context) (<-chan struct{}, func()) { return l.space.subscribe(key) })
}

func (l *Locker) try(key string, o distlock.Options) (distlock.Lease, error) {
	s := l.space
	start := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.keys[key]
	if e == nil {
		e = &entry{}
		s.keys[key] = e
	}
	if e.held(start) {
		return nil, fmt.Errorf("%w: key %q is held", distlock.ErrNotAcquired, key)
	}
	if e.token != "" { // expired but its timer has not run yet
		s.freeLocked(key, e, errExpired)
		s.keys[key] = e
	}
	s.fence++
	token := lease.NewToken()
	e.token, e.expires = token, start.Add(o.TTL)
	e.timer = time.AfterFunc(o.TTL, func() { s.expire(key, token) })
	e.lease = lease.New(lease.Config{ // validity cannot run out under the space lock
		Key: key, Token: token, Fence: s.fence, Start: start,
		ValidUntil: validity.Until(start, o.TTL, validity.DefaultDrift(o.TTL)),
		Options:    o,
		Driver:     driver{s: s, key: key, token: token},
		Group:      &l.watchdogs,
	})
	return e.lease, nil
}

// Revoke frees key whoever holds it, as an operator would, and notifies
// the holder's lease. It reports whether the key was held.
func (l *Locker) Revoke(key string) bool {
	s := l.space
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.keys[key]
	if e == nil || !e.held(time.Now()) {
		return false
	}
	s.freeLocked(key, e, errRevoked)
	return true
}

// driver is the lease.Driver of one memlock key.
type driver struct {
	s          *space
	key, token string
}

func (d driver) Extend(ctx context.Context, ttl time.Duration) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	start := time.Now()
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	e := d.s.keys[d.key]
	if e == nil || e.token != d.token || !e.held(start) {
		return time.Time{}, fmt.Errorf("%w: key %q is no longer ours", distlock.ErrLeaseLost, d.key)
	}
	e.expires = start.Add(ttl)
	e.timer.Reset(ttl)
	return validity.Until(start, ttl, validity.DefaultDrift(ttl)), nil
}

func (d driver) Release(ctx context.Context) error {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	e := d.s.keys[d.key]
	if e == nil || e.token != d.token || !e.held(time.Now()) {
		return fmt.Errorf("%w: key %q is no longer ours", distlock.ErrLeaseLost, d.key)
	}
	e.lease = nil // released, not lost: no notification
	d.s.freeLocked(d.key, e, nil)
	return nil
}
