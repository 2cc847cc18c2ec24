package distlock

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// ownerKey is the context key of WithOwner; its value is an ownerValue.
type ownerKey struct{}

// ownerValue carries WithOwner's owner, so that a nil owner is told apart
// from no owner.
type ownerValue struct{ owner any }

// WithOwner returns a copy of ctx that names owner as the holder on whose
// behalf a Locker made by Reentrant acquires. owner must be a comparable
// value other than nil (a request ID, a job pointer, a struct of IDs);
// the acquisition fails with ErrInvalidArgument otherwise. Other Lockers
// ignore it.
func WithOwner(ctx context.Context, owner any) context.Context {
	return context.WithValue(ctx, ownerKey{}, ownerValue{owner})
}

// Reentrant returns a Locker over l whose acquisitions are reentrant per
// owner: when ctx carries an owner (WithOwner) that already holds key
// through this Locker with a lease not yet lost, Acquire and TryAcquire
// return at once, with no request to the backend, a handle on that lease
// and count one more hold. A handle's Release only counts down; the
// release of the last hold releases the lease. Every handle shares the
// lease's Key, Token, Fence, ValidUntil, Done and Err (an inner handle's
// Done stays open after its Release while the lease is held), and Extend
// on any of them extends the lease. An inner acquisition's options are
// checked but do not change the lease (its TTL and watchdog are those of
// the outermost acquisition). Once the lease is lost, the owner's next
// acquisition takes a new lease: a lost lease is never handed out again.
// Acquisitions of one key by one owner from several goroutines at once
// take one lease between them.
//
// Without an owner in ctx, calls pass through to l unchanged. A Locker
// hands out one lease per acquisition: a second Acquire of a key that the
// same Locker holds waits like any other contender, and times out with
// ctx. That is deliberate. Redisson's reentrant lock counts holds per
// thread; Go has no goroutine identity to key on, and one Locker is
// shared by goroutines that legitimately contend on one key, so the
// Locker alone cannot tell a nested acquisition from a rival one. The
// owner says which acquisitions are one holder's. Unlike a Redisson
// thread, an owner can be carried by several goroutines (a context passed
// on): they share its holds and do not exclude each other, so pick an
// owner per unit of work that must hold the key alone.
//
// With an owner, a ctx already ended fails with ErrNotAcquired and
// ctx.Err(). Over a nil l, acquisitions fail with ErrInvalidArgument.
// Guarantees and Close are l's; Close does not release the leases held.
// Inspect, List and ForceRelease reach l's Inspector through the returned
// Locker's Unwrap method.
func Reentrant(l Locker) Locker {
	return &reentrant{Locker: l, holds: make(map[holdKey]*hold)}
}

// reentrant is the Locker Reentrant returns.
type reentrant struct {
	Locker
	mu    sync.Mutex
	holds map[holdKey]*hold // by owner and key; guarded by mu
}

// holdKey names one owner's holds on one key.
type holdKey struct {
	owner any
	key   string
}

// hold is one owner's lease on one key and its hold count.
type hold struct {
	ready chan struct{} // closed when the acquisition of lease ends
	lease Lease         // set before ready closes; nil if it failed
	count int           // live handles; guarded by reentrant.mu
}

// Guarantees is l's (zero over a nil l).
func (r *reentrant) Guarantees() Guarantees {
	if r.Locker == nil {
		return Guarantees{}
	}
	return r.Locker.Guarantees()
}

// Unwrap returns l, so that Inspect, List and ForceRelease reach its
// Inspector.
func (r *reentrant) Unwrap() Locker { return r.Locker }

// Close is l's (nil over a nil l).
func (r *reentrant) Close() error {
	if r.Locker == nil {
		return nil
	}
	return r.Locker.Close()
}

// Acquire is l.Acquire, reentrant for the owner in ctx (see Reentrant).
func (r *reentrant) Acquire(ctx context.Context, key string, opts ...Option) (Lease, error) {
	return r.acquire(ctx, key, opts, true)
}

// TryAcquire is l.TryAcquire, reentrant for the owner in ctx (see
// Reentrant). While another acquisition of key by the same owner is in
// flight it fails with ErrNotAcquired.
func (r *reentrant) TryAcquire(ctx context.Context, key string, opts ...Option) (Lease, error) {
	return r.acquire(ctx, key, opts, false)
}

// acquire hands out a handle on the owner's lease on key, taking the
// lease from the backend when the owner holds none that is live.
func (r *reentrant) acquire(ctx context.Context, key string, opts []Option, wait bool) (Lease, error) {
	if r.Locker == nil {
		return nil, fmt.Errorf("%w: Reentrant over a nil Locker", ErrInvalidArgument)
	}
	ov, ok := ctx.Value(ownerKey{}).(ownerValue)
	if !ok {
		if wait {
			return r.Locker.Acquire(ctx, key, opts...)
		}
		return r.Locker.TryAcquire(ctx, key, opts...)
	}
	if err := checkOwner(ov.owner); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: key %q: %w", ErrNotAcquired, key, err)
	}
	if err := checkInner(key, opts); err != nil {
		return nil, err
	}
	k := holdKey{ov.owner, key}
	for {
		r.mu.Lock()
		h := r.holds[k]
		if h == nil {
			h = &hold{ready: make(chan struct{})}
			r.holds[k] = h
			r.mu.Unlock()
			return r.take(ctx, k, h, opts, wait)
		}
		select {
		case <-h.ready:
		default: // the owner's acquisition of key is in flight
			r.mu.Unlock()
			if err := r.await(ctx, key, h, wait); err != nil {
				return nil, err
			}
			continue
		}
		select {
		case <-h.lease.Done(): // lost: never hand it out again
			delete(r.holds, k)
			r.mu.Unlock()
			continue
		default:
		}
		h.count++
		r.mu.Unlock()
		return &handle{r: r, k: k, h: h}, nil
	}
}

// take acquires the lease of the new hold h from the backend.
func (r *reentrant) take(ctx context.Context, k holdKey, h *hold, opts []Option, wait bool) (Lease, error) {
	var ls Lease
	var err error
	if wait {
		ls, err = r.Locker.Acquire(ctx, k.key, opts...)
	} else {
		ls, err = r.Locker.TryAcquire(ctx, k.key, opts...)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	defer close(h.ready)
	if err != nil {
		delete(r.holds, k)
		return nil, err
	}
	h.lease, h.count = ls, 1
	return &handle{r: r, k: k, h: h}, nil
}

// await waits for the owner's acquisition of key in flight (h) to end,
// unless the call may not wait.
func (r *reentrant) await(ctx context.Context, key string, h *hold, wait bool) error {
	if !wait {
		return fmt.Errorf("%w: key %q is being acquired by the same owner", ErrNotAcquired, key)
	}
	select {
	case <-h.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: key %q: %w", ErrNotAcquired, key, ctx.Err())
	}
}

// checkInner checks key and opts as a backend would, over the library
// defaults, without resolving options when there are none.
func checkInner(key string, opts []Option) error {
	if len(opts) == 0 {
		return CheckKey(key)
	}
	_, err := DefaultOptions().ResolveFor(key, opts...)
	return err
}

// checkOwner returns an error matching ErrInvalidArgument unless owner is
// a non-nil value that can be compared (and so used as a map key).
func checkOwner(owner any) (err error) {
	if owner == nil {
		return fmt.Errorf("%w: WithOwner: nil owner", ErrInvalidArgument)
	}
	defer func() {
		if recover() != nil {
			err = fmt.Errorf("%w: WithOwner: owner of type %T is not comparable", ErrInvalidArgument, owner)
		}
	}()
	_ = owner == owner
	return nil
}

// handle is one hold on a reentrant lease.
type handle struct {
	r *reentrant
	k holdKey
	h *hold

	mu       sync.Mutex // serializes Release
	released bool       // guarded by mu
	err      error      // the result of Release; guarded by mu
}

// The accessors are the shared lease's.
func (d *handle) Key() string           { return d.h.lease.Key() }
func (d *handle) Token() string         { return d.h.lease.Token() }
func (d *handle) Fence() uint64         { return d.h.lease.Fence() }
func (d *handle) ValidUntil() time.Time { return d.h.lease.ValidUntil() }
func (d *handle) Done() <-chan struct{} { return d.h.lease.Done() }
func (d *handle) Err() error            { return d.h.lease.Err() }

// Extend extends the shared lease.
func (d *handle) Extend(ctx context.Context, ttl time.Duration) error {
	return d.h.lease.Extend(ctx, ttl)
}

// Release counts this hold down; the last hold releases the lease and
// returns its Release's result. An inner hold returns nil, or the lease's
// error if it is lost. A second call returns the first call's result.
func (d *handle) Release(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.released {
		return d.err
	}
	d.released = true
	r := d.r
	r.mu.Lock()
	d.h.count--
	last := d.h.count == 0
	if last && r.holds[d.k] == d.h {
		delete(r.holds, d.k)
	}
	r.mu.Unlock()
	if last {
		d.err = d.h.lease.Release(ctx)
		return d.err
	}
	select {
	case <-d.h.lease.Done():
		d.err = d.h.lease.Err()
	default:
	}
	return d.err
}
