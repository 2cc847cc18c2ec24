package distlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DoReleaseTimeout bounds the Release that Do and TryDo make after fn
// returns: 10 s. The release runs on a context that keeps the caller's
// values but not its cancellation (context.WithoutCancel), so a caller
// whose context has ended still frees the key, and a backend that cannot
// be reached does not hold Do past this bound. A release that times out
// leaves the key to expire after its TTL. When the caller's context can
// never end (its Done is nil, as for context.Background), the release runs
// on it unchanged, as a direct Release would: backends then skip the
// goroutine they need to abandon a request on a context that can end, and
// the release is bounded by the backend client's own timeouts.
const DoReleaseTimeout = 10 * time.Second

// Do acquires key on l, waiting as l.Acquire does, runs fn while the lease
// is held, and releases the lease when fn returns or panics (a panic goes
// on after the release).
//
// fn's context is cancelled when the caller's ctx ends or as soon as the
// lease is known lost (its Done closes while it is still held: expired,
// taken over, revoked, its session ended). On loss, context.Cause(ctx)
// returns lease.Err(), which matches ErrLeaseLost and carries the cause.
// It is never cancelled for a lease still held. How soon a loss is known
// depends on the backend (see Guarantees); a lease can also run out
// unnoticed between the watchdog's extensions, so a resource that must
// never see two holders checks lease.Fence (package fencing).
//
// The watchdog is on by default: Do applies WithAutoExtend(0) before opts,
// so the lease is extended every TTL/3 up to the Locker's MaxHold.
// WithoutAutoExtend in opts turns it off; fn may then call lease.Extend.
// fn may release the lease itself: its context is then not cancelled and
// Do's own release returns the first call's result.
//
// The error is fn's, joined with lease.Err() if the lease was lost (once,
// even if fn returned it too) and with the release's error (unless it
// reports the same loss). When ctx ends before the key is acquired, fn is
// not run and the error matches ErrNotAcquired and ctx.Err(). A nil l, a
// nil fn or an empty key return an error matching ErrInvalidArgument;
// other acquisition errors are l.Acquire's. The goroutine that watches the
// lease starts when fn first waits on its context (Done); Do joins it
// before returning. Err of fn's context checks the lease itself;
// context.Cause reports a loss once Done has closed or Err has returned
// an error.
//
// Do takes a new lease every call: nested Do calls on one key from one
// Locker wait for each other like any two contenders. For nesting, use a
// Locker made by Reentrant with an owner in ctx (WithOwner).
func Do(ctx context.Context, l Locker, key string, fn func(ctx context.Context, lease Lease) error, opts ...Option) error {
	return do(ctx, l, key, fn, true, opts)
}

// TryDo is Do with one attempt to acquire (l.TryAcquire): if another
// holder has key, it returns an error matching ErrNotAcquired without
// running fn; if the backend cannot be reached, one matching
// ErrUnavailable. Everything else is as for Do.
func TryDo(ctx context.Context, l Locker, key string, fn func(ctx context.Context, lease Lease) error, opts ...Option) error {
	return do(ctx, l, key, fn, false, opts)
}

// doDefaults are the options Do applies before the caller's: the
// watchdog, up to the Locker's MaxHold.
var doDefaults = []Option{WithAutoExtend(0)}

// do is Do (wait) or TryDo.
func do(ctx context.Context, l Locker, key string, fn func(context.Context, Lease) error, wait bool, opts []Option) (err error) {
	switch {
	case l == nil:
		return fmt.Errorf("%w: Do on key %q: nil Locker", ErrInvalidArgument, key)
	case fn == nil:
		return fmt.Errorf("%w: Do on key %q: nil fn", ErrInvalidArgument, key)
	}
	if err := CheckKey(key); err != nil {
		return err
	}
	all := doDefaults
	if len(opts) > 0 {
		all = append(append(make([]Option, 0, len(opts)+1), doDefaults...), opts...)
	}
	var lease Lease
	if wait {
		lease, err = l.Acquire(ctx, key, all...)
	} else {
		lease, err = l.TryAcquire(ctx, key, all...)
	}
	if err != nil {
		return err
	}
	w := watchLease(ctx, lease)
	defer func() { err = w.finish(ctx, err) }()
	return fn(w, lease)
}

// leaseWatch cancels a section's context when its lease is lost.
//
// The goroutine that waits on the lease's Done starts the first time
// someone waits on the section's context (its Done: a select, a child
// context, context.AfterFunc); a section that never waits costs no
// goroutine. Err polls the lease, so a section that only checks Err sees
// a loss too.
type leaseWatch struct {
	context.Context // the section's context, as made by WithCancelCause
	lease           Lease
	cancel          context.CancelCauseFunc
	stop            chan struct{} // closed by finish: the section is over
	exited          chan struct{} // closed by the watcher goroutine as it returns

	mu       sync.Mutex
	started  bool // the watcher goroutine runs; guarded by mu
	finished bool // finish has begun: no watcher may start; guarded by mu
}

// watchLease derives the section's context from ctx; it is cancelled,
// with lease.Err() as the cause, when the lease's Done closes while it is
// not released.
func watchLease(ctx context.Context, lease Lease) *leaseWatch {
	w := &leaseWatch{lease: lease}
	w.Context, w.cancel = context.WithCancelCause(ctx)
	return w
}

// Done starts the watcher goroutine if it has not started yet.
func (w *leaseWatch) Done() <-chan struct{} {
	w.mu.Lock()
	if !w.started && !w.finished {
		w.started = true
		w.stop, w.exited = make(chan struct{}), make(chan struct{})
		go w.watch()
	}
	w.mu.Unlock()
	return w.Context.Done()
}

// Err checks the lease first, so that a loss is seen without a watcher.
func (w *leaseWatch) Err() error {
	select {
	case <-w.lease.Done():
		w.lost()
	default:
	}
	return w.Context.Err()
}

// watch cancels the section when the lease is lost, or returns at stop.
func (w *leaseWatch) watch() {
	defer close(w.exited)
	select {
	case <-w.lease.Done():
		w.lost()
	case <-w.stop:
	}
}

// lost cancels the section with the lease's error if the lease ended
// lost (not released by fn).
func (w *leaseWatch) lost() {
	if err := w.lease.Err(); errors.Is(err, ErrLeaseLost) {
		w.cancel(err)
	}
}

// finish ends the section: it stops and joins the watcher, cancels the
// section's context, releases the lease (see release) and joins fnErr with
// the lost-lease and release errors.
func (w *leaseWatch) finish(ctx context.Context, fnErr error) error {
	w.mu.Lock()
	w.finished = true
	started := w.started
	w.mu.Unlock()
	if started {
		close(w.stop)
		<-w.exited
	}
	w.cancel(context.Canceled)
	relErr := release(ctx, w.lease)
	lost := w.lease.Err()
	if !errors.Is(lost, ErrLeaseLost) {
		return join(fnErr, relErr)
	}
	if errors.Is(fnErr, lost) {
		lost = nil
	}
	if errors.Is(relErr, ErrLeaseLost) {
		relErr = nil
	}
	return join(fnErr, lost, relErr)
}

// release releases lease on a context that survives ctx's cancellation
// for at most DoReleaseTimeout, or on ctx itself if it can never end.
func release(ctx context.Context, lease Lease) error {
	if ctx.Done() == nil {
		return lease.Release(ctx)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DoReleaseTimeout)
	defer cancel()
	return lease.Release(rctx)
}

// join is errors.Join, except that a single non-nil error is returned as
// is, so a caller can compare fn's own error with ==.
func join(errs ...error) error {
	var one error
	for _, err := range errs {
		switch {
		case err == nil:
		case one != nil:
			return errors.Join(errs...)
		default:
			one = err
		}
	}
	return one
}
