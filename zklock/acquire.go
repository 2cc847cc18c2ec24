package zklock

import (
	"context"
	"errors"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/retry"
)

// begin checks the arguments, returns the session and registers the
// call with the lifecycle: on success the caller must call l.lc.Leave.
// A closed Locker returns distlock.ErrClosed.
func (l *Locker) begin(key string, opts []distlock.Option) (*session, distlock.Options, error) {
	o, err := l.opts.Lock.ResolveFor(key, opts...)
	if err != nil {
		return nil, o, err
	}
	if err := checkKey(key); err != nil {
		return nil, o, err
	}
	s, err := l.session(o.TTL)
	if err != nil {
		return nil, o, err
	}
	if !l.lc.Enter() {
		return nil, o, distlock.ErrClosed
	}
	return s, o, nil
}

// TryAcquire implements distlock.Locker: create the node, list the queue,
// and delete the node again unless it is first (three requests when held
// by someone else, two and a read of the own node when free; the create
// goes through the leader, so the listing needs no sync). It waits for
// a session at most Options.ConnectTimeout when ctx has no deadline. When
// ctx ends first, the error matches distlock.ErrNotAcquired, ctx.Err() and
// context.Cause(ctx). An empty key or one longer than MaxKeyLen returns
// an error matching distlock.ErrInvalidArgument; a closed Locker,
// distlock.ErrClosed.
func (l *Locker) TryAcquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	s, o, err := l.begin(key, opts)
	if err != nil {
		return nil, err
	}
	defer l.lc.Leave()
	if ctx.Err() != nil {
		return nil, notAcquired(ctx, nil, nil)
	}
	ls, err := l.acquireOnce(ctx, s, key, o, false)
	if err != nil && ctx.Err() != nil {
		err = notAcquired(ctx, err, nil)
	}
	return ls, err
}

// Acquire implements distlock.Locker: it queues and waits for its turn,
// woken by the deletion of the node before its own. Errors before the
// node is queued (no session, connection lost) are retried after a random
// delay in [RetryMin, RetryMax] once a session is up; a *SessionError (the
// session ended while queued, or while the create of the node was in
// flight, so that it may have been queued), an authorization failure
// (distlock.ErrAccessDenied) and distlock.ErrClosed are returned at
// once. When ctx ends, the error matches distlock.ErrNotAcquired, ctx.Err() and, for a
// context given a cause (context.WithCancelCause, WithTimeoutCause),
// context.Cause(ctx), and keeps the last backend error. An empty key or
// one longer than MaxKeyLen returns an error matching
// distlock.ErrInvalidArgument.
func (l *Locker) Acquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	s, o, err := l.begin(key, opts)
	if err != nil {
		return nil, err
	}
	defer l.lc.Leave()
	var last error
	for {
		if ctx.Err() != nil {
			return nil, notAcquired(ctx, nil, last)
		}
		ls, err := l.acquireOnce(ctx, s, key, o, true)
		var se *SessionError
		switch {
		case err == nil:
			return ls, nil
		case ctx.Err() != nil:
			return nil, notAcquired(ctx, err, last)
		case errors.As(err, &se), !errors.Is(err, distlock.ErrUnavailable), errors.Is(err, distlock.ErrAccessDenied):
			return nil, err
		}
		last = err
		if retry.Wait(ctx, retry.Delay(o.RetryMin, o.RetryMax), l.lc.Closing().Done()) != nil {
			return nil, notAcquired(ctx, nil, last)
		}
	}
}
