// Package lease is the one Lease implementation every backend uses: it
// keeps the validity, fires Done when the lease is released or lost, runs
// the optional watchdog, and serialises Extend and Release against it.
// Backends supply only the per-key server operations (Driver) and a Group
// through which their Close stops and joins the watchdogs.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/validity"
)

// Causes joined with distlock.ErrLeaseLost in Err.
var (
	// ErrExpired: the validity passed without a successful extension.
	ErrExpired = errors.New("validity passed without extension")
	// ErrMaxHold: automatic extension stopped at the max hold time.
	ErrMaxHold = errors.New("max hold time reached")
)

// Driver is the backend's side of one held key.
type Driver interface {
	// Extend resets the key's TTL to ttl only if the key is still ours,
	// and returns the new conservative validity (measured from before the
	// request). If the key is gone or someone else's, the error matches
	// distlock.ErrLeaseLost; other errors mean the outcome is unknown.
	Extend(ctx context.Context, ttl time.Duration) (validUntil time.Time, err error)
	// Release deletes the key only if it is still ours. If it was not
	// ours any more, the error matches distlock.ErrLeaseLost.
	Release(ctx context.Context) error
}

// Config describes a freshly acquired lease.
type Config struct {
	// Key is the key held; Token the ownership value written with it
	// (NewToken); Fence the fencing token minted for this acquisition.
	Key, Token string
	Fence      uint64
	// Start is the monotonic instant taken before the acquisition's
	// first request; MaxHold counts from it.
	Start time.Time
	// ValidUntil is the conservative end of exclusion the acquisition
	// measured (validity.Until).
	ValidUntil time.Time
	// Options are the call's resolved options: TTL for extensions,
	// AutoExtend and MaxHold for the watchdog.
	Options distlock.Options
	// Driver performs Extend and Release on the backend.
	Driver Driver
	// OnEnd, if set, is called once when the lease ends (released or
	// lost), after Done is closed, with no lock of the lease held. It must
	// not block. Backends use it to let the next local caller proceed.
	OnEnd func()
	// Group, if set, owns the lease's watchdog: Group.Close stops it and
	// waits for it to exit. Backends pass their Locker's Group so that
	// Close leaves no goroutine running. A closed Group starts none.
	Group *Group
	// Drift, if set, is the clock drift the backend allows for a TTL
	// (default validity.DefaultDrift). An extension whose outcome is
	// unknown caps the validity at its start + ttl - Drift(ttl), so a
	// backend configured with a larger drift must pass it.
	Drift func(ttl time.Duration) time.Duration
}

// Lease implements distlock.Lease over a Driver.
type Lease struct {
	key, token string
	fence      uint64
	start      time.Time
	opts       distlock.Options
	driver     Driver
	onEnd      func()
	drift      func(ttl time.Duration) time.Duration

	mu         sync.Mutex
	validUntil time.Time
	expiry     *time.Timer
	err        error // nil while held
	done       chan struct{}
	renewErr   error // first watchdog failure, reported if the lease then expires
	capped     bool  // the watchdog stopped extending at MaxHold

	stopWatch context.CancelFunc
	watchDone chan struct{}

	// extending holds one token while an extension is in flight: the
	// watchdog's and the caller's extensions take turns, so the validity
	// is always the one of the extension the server applied last.
	extending chan struct{}

	// releasing is set once Release has begun: a key an extension then
	// finds gone was deleted by that Release, not lost.
	releasing bool

	releaseOnce sync.Once
	releaseErr  error
}

var _ distlock.Lease = (*Lease)(nil)

// New returns a held lease and starts its expiry timer and, if
// cfg.Options.AutoExtend, its watchdog goroutine. A lease whose validity
// has already passed is returned lost.
func New(cfg Config) *Lease {
	l := &Lease{
		key: cfg.Key, token: cfg.Token, fence: cfg.Fence, start: cfg.Start,
		opts: cfg.Options, driver: cfg.Driver, validUntil: cfg.ValidUntil,
		onEnd: cfg.OnEnd, drift: cfg.Drift, done: make(chan struct{}), extending: make(chan struct{}, 1),
	}
	if l.drift == nil {
		l.drift = validity.DefaultDrift
	}
	l.mu.Lock()
	l.expiry = time.AfterFunc(time.Until(cfg.ValidUntil), l.onExpiry)
	l.mu.Unlock()
	if cfg.Options.AutoExtend {
		ctx, cancel := context.WithCancel(context.Background())
		if cfg.Group.add(l, cancel) {
			l.stopWatch, l.watchDone = cancel, make(chan struct{})
			go l.watch(ctx, cfg.Group)
		} else {
			cancel() // the Locker is closed: the lease runs out at its validity
		}
	}
	return l
}

// NewToken returns 128 random bits from crypto/rand, hex encoded.
func NewToken() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("distlock: crypto/rand failed: " + err.Error()) // never returns an error on Linux
	}
	return hex.EncodeToString(b[:])
}

// Key implements distlock.Lease.
func (l *Lease) Key() string { return l.key }

// Token implements distlock.Lease: 128 random bits, hex.
func (l *Lease) Token() string { return l.token }

// Fence implements distlock.Lease.
func (l *Lease) Fence() uint64 { return l.fence }

// Done implements distlock.Lease: closed on release or loss.
func (l *Lease) Done() <-chan struct{} { return l.done }

// ValidUntil implements distlock.Lease; extensions move it.
func (l *Lease) ValidUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.validUntil
}

// Err implements distlock.Lease: nil while held.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Lose marks the lease lost with cause (backends call it when they learn
// of a loss: session ended, connection dropped, node deleted). It has no
// effect on a lease already released or lost.
func (l *Lease) Lose(cause error) {
	l.mu.Lock()
	ended := l.finishLocked(errors.Join(distlock.ErrLeaseLost, cause))
	l.mu.Unlock()
	l.ended(ended)
}

// finishLocked ends the lease with err; it reports whether this call
// ended it (the caller then calls ended(true) after unlocking).
// A lease that ended claims no exclusion: its validity ends now if it had
// not passed yet.
func (l *Lease) finishLocked(err error) bool {
	if l.err != nil {
		return false
	}
	l.err = err
	if now := time.Now(); l.validUntil.After(now) {
		l.validUntil = now
	}
	l.expiry.Stop()
	close(l.done)
	return true
}

// ended runs the OnEnd hook if this caller ended the lease.
func (l *Lease) ended(ended bool) {
	if ended && l.onEnd != nil {
		l.onEnd()
	}
}

func (l *Lease) onExpiry() {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	if left := time.Until(l.validUntil); left > 0 { // extended meanwhile
		l.expiry.Reset(left)
		l.mu.Unlock()
		return
	}
	ended := l.finishLocked(errors.Join(distlock.ErrLeaseLost, l.expiryCauseLocked(), l.renewErr))
	l.mu.Unlock()
	l.ended(ended)
}

// expiryCauseLocked says why a lease whose validity passed ended: the
// watchdog stopped at MaxHold, or it simply was not extended in time.
func (l *Lease) expiryCauseLocked() error {
	if l.capped {
		return ErrMaxHold
	}
	return ErrExpired
}

// Extend implements distlock.Lease.
func (l *Lease) Extend(ctx context.Context, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("%w: TTL must be > 0, got %v", distlock.ErrInvalidArgument, ttl)
	}
	return l.extend(ctx, ttl)
}

// extend runs one extension, after any other in flight. It refuses to
// extend a lease whose validity has passed even if its expiry timer has not
// fired yet (the server may already have given the key to someone else),
// and gives up on an extension still unanswered when the validity ends.
func (l *Lease) extend(ctx context.Context, ttl time.Duration) error {
	select {
	case l.extending <- struct{}{}:
		defer func() { <-l.extending }()
	case <-l.done:
		return l.Err()
	case <-ctx.Done():
		return fmt.Errorf("%w: waiting for an extension in flight: %w", distlock.ErrUnavailable, ctx.Err())
	}
	l.mu.Lock()
	if l.err == nil && !time.Now().Before(l.validUntil) {
		ended := l.finishLocked(errors.Join(distlock.ErrLeaseLost, l.expiryCauseLocked(), l.renewErr))
		l.mu.Unlock()
		l.ended(ended)
		return l.Err()
	}
	err, until := l.err, l.validUntil
	l.mu.Unlock()
	if err != nil {
		return err
	}
	sent := time.Now()
	// An answer after the validity ends comes too late (the lease is lost
	// then), so the request is bounded by it whatever ctx allows.
	bctx, cancel := context.WithDeadline(ctx, until)
	vu, err := l.driver.Extend(bctx, ttl)
	late := bctx.Err() != nil && ctx.Err() == nil
	cancel()
	if err != nil && late { // the expiry timer ends the lease
		return fmt.Errorf("%w: no answer to the extension before the lease's validity ended: %w", distlock.ErrLeaseLost, err)
	}
	if err != nil {
		if errors.Is(err, distlock.ErrLeaseLost) {
			l.mu.Lock()
			releasing := l.releasing
			l.mu.Unlock()
			if !releasing {
				l.Lose(err)
			}
			return err
		}
		// Outcome unknown: some servers may have applied the new TTL, which
		// may be shorter than what was left. Keep only the validity both
		// outcomes allow.
		l.capValidity(validity.Until(sent, ttl, l.drift(ttl)))
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil { // released or lost while the request was in flight
		return l.err
	}
	l.validUntil = vu
	l.expiry.Reset(time.Until(vu))
	return nil
}

// capValidity lowers the validity to at most vu (never raises it); the
// expiry timer fires at once if vu has passed.
func (l *Lease) capValidity(vu time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil || !vu.Before(l.validUntil) {
		return
	}
	l.validUntil = vu
	l.expiry.Reset(time.Until(vu))
}

// Release implements distlock.Lease.
func (l *Lease) Release(ctx context.Context) error {
	l.releaseOnce.Do(func() {
		if l.stopWatch != nil {
			l.stopWatch()
			<-l.watchDone // no extension can start after this point
		}
		l.mu.Lock()
		l.releasing = true
		l.mu.Unlock()
		err := l.driver.Release(ctx)
		l.mu.Lock()
		if err != nil && l.err != nil && errors.Is(err, distlock.ErrLeaseLost) {
			err = errors.Join(err, l.err) // say why it was lost
		}
		ended := l.finishLocked(distlock.ErrReleased)
		l.mu.Unlock()
		l.ended(ended)
		l.releaseErr = err
	})
	return l.releaseErr
}

// watch extends the lease every TTL/3 until Release stops it, the lease is
// lost, or MaxHold is reached. It never re-acquires: the driver's Extend
// only touches a key that is still ours. A failed extension is retried at
// shorter intervals while validity remains; if validity runs out first,
// onExpiry reports the lease lost with the first failure as the cause.
func (l *Lease) watch(ctx context.Context, g *Group) {
	defer func() {
		g.remove(l)
		close(l.watchDone)
	}()
	interval := l.opts.TTL / 3
	holdEnd := l.start.Add(l.opts.MaxHold)
	wait := interval
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-l.done:
			t.Stop()
			return
		case <-t.C:
		}
		ttl := min(l.opts.TTL, time.Until(holdEnd))
		if ttl <= 0 {
			l.mu.Lock()
			l.capped = true
			l.mu.Unlock()
			return // the lease runs out at holdEnd; onExpiry reports ErrMaxHold
		}
		left := time.Until(l.ValidUntil())
		if left <= 0 {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, left)
		err := l.extend(cctx, ttl)
		cancel()
		switch {
		case err == nil:
			wait = interval
			if ttl < l.opts.TTL {
				l.mu.Lock()
				l.capped = true
				l.mu.Unlock()
				return // extended to the cap: the lease runs out at holdEnd
			}
		case ctx.Err() != nil || l.Err() != nil:
			return
		default:
			l.mu.Lock()
			if l.renewErr == nil {
				l.renewErr = fmt.Errorf("automatic extension failed: %w", err)
			}
			l.mu.Unlock()
			wait = max(time.Until(l.ValidUntil())/4, 10*time.Millisecond)
		}
	}
}

// ErrExpiredInFlight: the acquisition succeeded on the server, but its
// validity had run out by the time the reply was read.
var ErrExpiredInFlight = errors.New("validity ran out before the reply was read")

// Grant is how a backend hands out a lease it just acquired: if the
// validity already passed (the request or reply was slow, or the client
// was paused), it releases the key and returns an error matching
// distlock.ErrUnavailable and ErrExpiredInFlight, so Acquire never returns
// a lease that is already expired (a blocking Acquire tries again).
func Grant(ctx context.Context, cfg Config) (*Lease, error) {
	if left := time.Until(cfg.ValidUntil); left <= 0 {
		rerr := cfg.Driver.Release(context.WithoutCancel(ctx))
		if errors.Is(rerr, distlock.ErrLeaseLost) {
			rerr = nil // already gone: nothing to clean up
		}
		return nil, errors.Join(distlock.ErrUnavailable,
			fmt.Errorf("%w (%v over)", ErrExpiredInFlight, -left), rerr)
	}
	return New(cfg), nil
}
