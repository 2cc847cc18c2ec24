// Package distlock gives services one lock API over the lock services they
// already run: Redlock over N Redis masters, a single Redis, Postgres advisory
// locks, etcd and ZooKeeper, plus an in-process backend.
//
// A Locker is chosen by URL (see Open) and hands out a Lease per acquisition.
// A Lease says until when exclusion is guaranteed (ValidUntil), carries a
// fencing token (Fence) that a protected resource can use to reject stale
// holders (see package fencing), and signals when it is lost (Done, Err).
//
// Each backend states what it promises in its Guarantees; the conformance
// package checks those promises on real servers under injected faults.
package distlock

import (
	"context"
	"time"
)

// Locker hands out leases on named keys. Implementations are safe for
// concurrent use by multiple goroutines.
type Locker interface {
	// Acquire waits until the key is held by this caller or ctx is done.
	// When ctx ends first, the error matches ErrNotAcquired and ctx.Err(),
	// and keeps the last backend error. Invalid arguments (empty key,
	// TTL <= 0) return an error matching ErrInvalidArgument; a closed
	// Locker returns ErrClosed.
	Acquire(ctx context.Context, key string, opts ...Option) (Lease, error)

	// TryAcquire makes one attempt. If another holder has the key, the
	// error matches ErrNotAcquired; if the backend cannot be reached, it
	// matches ErrUnavailable. A ctx already ended returns an error
	// matching ErrNotAcquired and ctx.Err(); invalid arguments and a
	// closed Locker fail as for Acquire.
	TryAcquire(ctx context.Context, key string, opts ...Option) (Lease, error)

	// Guarantees reports what this backend promises, as configured.
	Guarantees() Guarantees

	// Close releases the Locker's connections and stops the automatic
	// extension of its leases, waiting for every goroutine it started.
	// Leases still held are not released by Close; they expire after
	// their TTL. TryAcquire and Acquire after Close return an error
	// matching ErrClosed, and an Acquire blocked when Close begins returns
	// before Close does. Close is idempotent; its error, if any, comes
	// from closing the backend's connections.
	Close() error
}

// Lease is one acquisition of a key. It is safe for concurrent use.
type Lease interface {
	// Key is the key this lease holds.
	Key() string

	// Token is the random ownership value written to the backend: at
	// least 128 bits from crypto/rand, new for every acquisition.
	Token() string

	// Fence is the fencing token: strictly increasing across successive
	// holders of the key wherever the backend can promise it (see
	// Guarantees.Fence). 0 is never issued.
	Fence() uint64

	// ValidUntil is the conservative end of exclusion: measured from
	// before the first request of the acquisition (or the last
	// extension), minus elapsed time and clock drift, on the monotonic
	// clock. After it passes, another client may hold the key. Once the
	// lease ends (Done closed), ValidUntil is no later than that moment.
	ValidUntil() time.Time

	// Extend asks the backend to keep the lease for ttl from now. It
	// never re-acquires a key that has expired or passed to someone
	// else: then it returns an error matching ErrLeaseLost and the lease
	// is lost. It returns by the end of the lease's validity at the
	// latest, whatever ctx allows: an extension unanswered by then
	// returns ErrLeaseLost. ttl <= 0 returns ErrInvalidArgument.
	Extend(ctx context.Context, ttl time.Duration) error

	// Release gives the key up. It stops automatic extension first and
	// waits for it to exit. It deletes the key only if it is still ours:
	// if the lease had already expired or was taken over, it returns an
	// error matching ErrLeaseLost and leaves the other holder alone.
	// After Release, Done is closed and Err matches ErrReleased. Release
	// is idempotent: a second call returns the first call's result.
	Release(ctx context.Context) error

	// Done is closed when the lease is released or known to be lost.
	Done() <-chan struct{}

	// Err is nil while the lease is held; after Done is closed it matches
	// ErrReleased if the lease was released while held, or ErrLeaseLost
	// (joined with the cause) if it was lost first; a later Release does
	// not change it.
	Err() error
}
