package pgadvisory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/validity"
)

// The lease's Driver is the hold (hold.go): Extend is a heartbeat on the
// hold's pinned connection, Release an unlock on it, and a loss is
// reported through the lease (hold.end, hold.lose) before the connection
// closes and the server frees the lock.

var _ lease.Driver = (*hold)(nil)

// Extend implements lease.Driver: a heartbeat that resets the server's
// idle timeout to ttl and checks that the same backend still holds the
// session. Any failure closes the connection (which frees the lock) and
// reports the lease lost: a heartbeat whose outcome is unknown cannot be
// trusted to have kept the lock. A heartbeat that ctx or the request
// timeout ends reports the lease lost first (see guard); its error
// matches distlock.ErrLeaseLost and distlock.ErrUnavailable. A ttl above
// MaxTTL is refused (distlock.ErrInvalidArgument) without a request, and
// the lease goes on unchanged.
func (h *hold) Extend(ctx context.Context, ttl time.Duration) (time.Time, error) {
	if err := checkTTL(ttl); err != nil {
		return time.Time{}, err // the lease goes on as it was
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.finished || !h.take() {
		return time.Time{}, fmt.Errorf("%w: pgadvisory: %q: %w", distlock.ErrLeaseLost, h.key, h.lostCause())
	}
	start := time.Now()
	q := h.l.sql.heartbeat
	if h.mode == ModeTransaction {
		q = h.l.sql.xheartbeat
	}
	var pid int32
	var setting string
	hctx, done := h.guard(ctx)
	err := h.c.QueryRow(hctx, q, ttlArgs(ttl)...).Scan(&pid, &setting)
	if why := done(); why != nil {
		// Reported lost before the connection was closed: even a reply
		// that came in time is not trusted.
		h.end(nil)
		return time.Time{}, fmt.Errorf("%w: %w: pgadvisory: heartbeat of %q: %w (connection closed, freeing the lock)",
			distlock.ErrLeaseLost, distlock.ErrUnavailable, h.key, why)
	}
	if err == nil && uint32(pid) != h.pid {
		err = &PoolerError{ConnPID: h.pid, BackendPID: uint32(pid), Lease: true}
	}
	if err == nil && h.mode == ModeSession {
		h.c.setTimeout(ttl)
	}
	if err != nil {
		err = fmt.Errorf("pgadvisory: heartbeat of %q failed, connection closed: %w", h.key, err)
		h.end(err)
		return time.Time{}, fmt.Errorf("%w: %w", distlock.ErrLeaseLost, err)
	}
	vu := validity.Until(start, ttl, validity.DefaultDrift(ttl))
	h.vmu.Lock()
	h.validUntil = vu
	h.vmu.Unlock()
	h.give()
	return vu, nil
}

// Release implements lease.Driver: a checked unlock (session mode) or a
// commit (transaction mode), bounded by the request timeout. If the
// unlock's outcome is in doubt (no reply in time, ctx ended), the
// connection is closed rather than returned to the pool, so the lock
// cannot be left behind or stacked, and the error matches
// distlock.ErrUnavailable.
func (h *hold) Release(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.finished {
		return nil
	}
	h.finished = true
	if !h.take() {
		return fmt.Errorf("%w: pgadvisory: %q: %w", distlock.ErrLeaseLost, h.key, h.lostCause())
	}
	var held bool
	var pid uint32
	err := request(ctx, h.l.opts.RequestTimeout, func(ctx context.Context) (err error) {
		held, pid, err = h.unlock(ctx)
		return err
	})
	switch {
	case err != nil:
		h.end(nil)
		if sessionEnded(err) {
			return fmt.Errorf("%w: pgadvisory: %q: the server session ended: %w", distlock.ErrLeaseLost, h.key, err)
		}
		if ctx.Err() != nil {
			err = errors.Join(err, ctxError(ctx))
		}
		return fmt.Errorf("%w: pgadvisory: release %q: %w: %w", distlock.ErrUnavailable, h.key, errUnknown, err)
	case pid != h.pid:
		h.end(nil)
		return fmt.Errorf("%w: %w", distlock.ErrLeaseLost, &PoolerError{ConnPID: h.pid, BackendPID: pid, Lease: true})
	case !held:
		h.end(nil)
		return fmt.Errorf("%w: pgadvisory: %q was no longer held by this session", distlock.ErrLeaseLost, h.key)
	}
	h.l.pool.put(h.c)
	return nil
}

// unlock runs the release statement(s) and reports whether the lock was
// held and by which backend.
func (h *hold) unlock(ctx context.Context) (held bool, pid uint32, err error) {
	var p int32
	h.c.sent = time.Now()
	if h.mode == ModeSession {
		err = h.c.QueryRow(ctx, h.l.sql.unlock, h.id).Scan(&held, &p)
		return held, uint32(p), err
	}
	b := &pgx.Batch{}
	b.Queue("SELECT pg_backend_pid()")
	b.Queue("COMMIT")
	br := h.c.SendBatch(ctx, b)
	err = br.QueryRow().Scan(&p)
	tag, cerr := br.Exec()
	err = errors.Join(err, cerr, br.Close())
	// A transaction that had failed ends with ROLLBACK: its lock was gone.
	return err == nil && tag.String() == "COMMIT", uint32(p), err
}

// guard returns the context of a heartbeat on the hold's connection.
// pgx closes the connection of a request its context interrupts, and
// closing it frees the lock; so the returned context ends only after the
// lease has been reported lost: when ctx ends or the request timeout
// passes. Once the Locker's Close has begun, a cancellation of ctx does
// not end it: Close cancels the watchdog's context, but promises not to
// release the lease, so the heartbeat runs on to its reply or its bound
// (the request timeout, or ctx's deadline if sooner), and Close waits for
// it. done stops the guard and returns why it interrupted the heartbeat,
// or nil.
func (h *hold) guard(ctx context.Context) (gctx context.Context, done func() error) {
	gctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	var once sync.Once
	var why error
	interrupt := func(cause error) {
		once.Do(func() {
			why = cause
			h.lose(fmt.Errorf("pgadvisory: heartbeat of %q interrupted (%w); the connection is closed, freeing the lock", h.key, cause))
			cancel(cause)
		})
	}
	timeout := h.l.opts.RequestTimeout
	bound := fmt.Errorf("%w: %v", errRequestTimeout, timeout)
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout, bound = time.Until(dl), context.DeadlineExceeded
	}
	timer := time.AfterFunc(timeout, func() { interrupt(bound) })
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) && h.l.lc.Closed() {
			return // Close stopped the watchdog: the timer still bounds the heartbeat
		}
		interrupt(ctxError(ctx))
	})
	return gctx, func() error {
		timer.Stop()
		stop()
		once.Do(func() {}) // waits for an interrupt under way; none starts after
		cancel(nil)
		return why
	}
}
