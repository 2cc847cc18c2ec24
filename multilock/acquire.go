package multilock

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/distlock/distlock"
)

// Acquire takes every key of keys on l, waiting for each as l.Acquire
// does, in canonical order (sorted bytewise), and returns one lease over
// all of them. opts apply to every key.
//
// On any failure nothing stays held: the keys taken so far are released
// (see the package doc) and the error names the key that failed. When ctx
// ends first, the error matches distlock.ErrNotAcquired and ctx.Err();
// other errors are l.Acquire's (distlock.ErrUnavailable,
// distlock.ErrClosed, distlock.ErrInvalidArgument for bad options). A
// key taken early that is lost before the last one is taken fails the
// call with an error matching distlock.ErrNotAcquired and
// distlock.ErrLeaseLost; retry, or pass distlock.WithAutoExtend.
//
// A nil l, an empty set, an empty key, a key given twice or more than
// MaxKeys keys return an error matching distlock.ErrInvalidArgument
// before any request is made.
func Acquire(ctx context.Context, l distlock.Locker, keys []string, opts ...distlock.Option) (*Lease, error) {
	return acquire(ctx, l, keys, true, opts)
}

// TryAcquire makes one attempt per key (l.TryAcquire), in canonical
// order, and stops at the first key it cannot take: if another holder has
// it, the error matches distlock.ErrNotAcquired; if the backend cannot be
// reached, distlock.ErrUnavailable. The keys taken before are released,
// as for Acquire. A ctx already ended returns an error matching
// distlock.ErrNotAcquired and ctx.Err(). Bad arguments fail as for
// Acquire.
func TryAcquire(ctx context.Context, l distlock.Locker, keys []string, opts ...distlock.Option) (*Lease, error) {
	return acquire(ctx, l, keys, false, opts)
}

// Canonical returns a sorted copy of keys: the order in which Acquire
// takes them. The set must be non-empty, hold at most MaxKeys keys, none
// empty and none twice; otherwise the error matches
// distlock.ErrInvalidArgument and says what to fix.
func Canonical(keys []string) ([]string, error) {
	switch {
	case len(keys) == 0:
		return nil, fmt.Errorf("%w: multilock: no keys; pass at least one", distlock.ErrInvalidArgument)
	case len(keys) > MaxKeys:
		return nil, fmt.Errorf("%w: multilock: %d keys, at most %d (MaxKeys); split the set or lock a coarser key",
			distlock.ErrInvalidArgument, len(keys), MaxKeys)
	}
	for i, k := range keys {
		if k == "" {
			return nil, fmt.Errorf("%w: multilock: key %d of %d is empty", distlock.ErrInvalidArgument, i+1, len(keys))
		}
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return nil, fmt.Errorf("%w: multilock: key %q given twice; pass each key once",
				distlock.ErrInvalidArgument, sorted[i])
		}
	}
	return sorted, nil
}

// acquire is Acquire (wait) or TryAcquire.
func acquire(ctx context.Context, l distlock.Locker, keys []string, wait bool, opts []distlock.Option) (*Lease, error) {
	if l == nil {
		return nil, fmt.Errorf("%w: multilock: nil Locker", distlock.ErrInvalidArgument)
	}
	sorted, err := Canonical(keys)
	if err != nil {
		return nil, err
	}
	parts := make([]distlock.Lease, 0, len(sorted))
	for i, key := range sorted {
		part, err := take(ctx, l, key, wait, opts)
		if err != nil {
			err = fmt.Errorf("multilock: key %q (%d of %d): %w", key, i+1, len(sorted), err)
			return nil, cleanup(ctx, parts, err)
		}
		parts = append(parts, part)
	}
	for i, part := range parts {
		if cause := part.Err(); cause != nil {
			err := fmt.Errorf("%w: multilock: key %q (%d of %d) was lost while the later keys were taken: %w",
				distlock.ErrNotAcquired, sorted[i], i+1, len(sorted), cause)
			return nil, cleanup(ctx, parts, err)
		}
	}
	return newLease(sorted, parts), nil
}

// take acquires one key. A ctx that has ended fails here, the same way on
// every backend, before a request is made.
func take(ctx context.Context, l distlock.Locker, key string, wait bool, opts []distlock.Option) (distlock.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", distlock.ErrNotAcquired, err)
	}
	if wait {
		return l.Acquire(ctx, key, opts...)
	}
	return l.TryAcquire(ctx, key, opts...)
}

// cleanup releases parts in reverse order on a context that keeps ctx's
// values but not its cancellation, each bounded by CleanupTimeout, and
// returns err with any release failure appended on the same line.
func cleanup(ctx context.Context, parts []distlock.Lease, err error) error {
	for i := len(parts) - 1; i >= 0; i-- {
		if rerr := release(ctx, parts[i]); rerr != nil && !errors.Is(rerr, distlock.ErrLeaseLost) {
			err = fmt.Errorf("%w; and releasing key %q: %w", err, parts[i].Key(), rerr)
		}
	}
	return err
}

// joinLine joins errs on one line ("; "), each still matched by
// errors.Is; nil if errs is empty.
func joinLine(errs []error) error {
	var err error
	for _, e := range errs {
		if err == nil {
			err = e
		} else {
			err = fmt.Errorf("%w; %w", err, e)
		}
	}
	return err
}

// release releases one part within CleanupTimeout, whatever ctx's state.
func release(ctx context.Context, part distlock.Lease) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	defer cancel()
	return part.Release(rctx)
}
