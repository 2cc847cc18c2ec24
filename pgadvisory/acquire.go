package pgadvisory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/retry"
	"github.com/distlock/distlock/internal/validity"
)

// Acquire implements distlock.Locker: it waits on the server until the
// key is granted (pg_advisory_lock), so the release hands it over without
// polling. While the server cannot be reached it retries at the retry
// delay. When ctx ends, it returns at once with an error matching
// distlock.ErrNotAcquired and ctx.Err(); the connection is then closed in
// the background (Close waits for that), so a grant that raced the
// cancellation is freed with it, even on a server that does not answer.
// If the server ends the waiting session
// (terminated, restarted), the error matches distlock.ErrUnavailable; so
// it does if the waiter is cut off from the server: every TTL/3 of
// waiting it checks on another connection that the server still answers
// within TTL/2 (a partition can keep the waiting connection up while
// nothing reaches it). A full lock table gives a *LockTableFullError at
// once.
func (l *Locker) Acquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.opts.Lock.ResolveFor(key, opts...)
	if err != nil {
		return nil, err
	}
	return l.acquire(ctx, key, KeyID(l.opts.Namespace, key), o, true)
}

// TryAcquire implements distlock.Locker: one pg_try_advisory_lock with the
// fence, one round trip. If no reply comes within Options.RequestTimeout
// or ctx ends in flight, the error matches distlock.ErrUnavailable and
// the connection is closed (in the background if ctx ended, so the call
// returns at once; Close waits for that), which frees the lock if the
// attempt took it.
func (l *Locker) TryAcquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.opts.Lock.ResolveFor(key, opts...)
	if err != nil {
		return nil, err
	}
	if err := ended(ctx, nil); err != nil {
		return nil, err
	}
	return l.acquire(ctx, key, KeyID(l.opts.Namespace, key), o, false)
}

// AcquireID is Acquire on the integer advisory lock id itself, as
// pg_advisory_lock(id) takes it: no namespace, so it excludes (and is
// excluded by) an application's own pg_advisory_lock(id). The lease's Key
// is the decimal id. Its errors are Acquire's.
func (l *Locker) AcquireID(ctx context.Context, id int64, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.opts.Lock.Resolve(opts...)
	if err != nil {
		return nil, err
	}
	return l.acquire(ctx, strconv.FormatInt(id, 10), id, o, true)
}

// TryAcquireID is TryAcquire on the integer advisory lock id (see
// AcquireID). Its errors are TryAcquire's.
func (l *Locker) TryAcquireID(ctx context.Context, id int64, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.opts.Lock.Resolve(opts...)
	if err != nil {
		return nil, err
	}
	if err := ended(ctx, nil); err != nil {
		return nil, err
	}
	return l.acquire(ctx, strconv.FormatInt(id, 10), id, o, false)
}

// grantResult is what a lock statement returned.
type grantResult struct {
	got   bool
	fence uint64
	pid   uint32
}

// acquire is Acquire (wait) and TryAcquire (!wait) for lock id of key.
// A blocking call retries while the server cannot be reached, at the
// retry delay; once its statement waits on the server, the server hands
// it the lock.
func (l *Locker) acquire(ctx context.Context, key string, id int64, o distlock.Options, wait bool) (distlock.Lease, error) {
	if err := checkTTL(o.TTL); err != nil {
		return nil, err
	}
	if !l.lc.Enter() {
		return nil, distlock.ErrClosed
	}
	defer l.lc.Leave()
	ctx, cancel := l.callContext(ctx)
	defer cancel()
	var last error
	stale := 0 // pooled connections found ended for idleness
	// since is the start of this attempt, or of the first of the attempts
	// that found their pooled session ended for idleness and went on at
	// once: the validity counts from before the first request.
	var since time.Time
	for {
		if l.lc.Closed() {
			return nil, errors.Join(distlock.ErrClosed, last)
		}
		if err := ended(ctx, last); err != nil {
			return nil, err
		}
		if since.IsZero() {
			since = time.Now()
		}
		c, err := l.pool.get(ctx)
		if err == nil && testHookAfterGet != nil {
			testHookAfterGet(c)
		}
		if pe, ok := pgError(err); ok && pe.Code == codeOutOfSharedMemory {
			err = &LockTableFullError{Key: key, Err: pe} // a new session needs lock table entries too
		}
		if err == nil {
			if err = l.ensureFence(ctx, c); err != nil {
				l.pool.discard(ctx, c)
			}
		}
		var ls distlock.Lease
		if err == nil {
			ls, err = l.lockOn(ctx, c, key, id, o, wait, since)
		}
		switch {
		case err == nil:
			return ls, nil
		case l.lc.Closed():
			return nil, errors.Join(distlock.ErrClosed, err)
		case ctx.Err() != nil && wait:
			return nil, ended(ctx, err)
		case endedIdle(err) && stale < maxStale:
			stale++ // the session ended with whatever it held: start again on another connection
			last = err
			continue // keeping since
		case endedIdle(err):
			// Out of fresh starts. Nothing is held: TryAcquire says so; a
			// blocking Acquire waits the retry delay, as for any
			// unavailability, and starts again.
			err = staleSessions(key, stale+1, err)
			if !wait {
				return nil, err
			}
			stale = 0
		case !wait || !retryable(err):
			return nil, err
		}
		last = err
		since = time.Time{} // the next attempt starts afresh
		if errors.Is(err, lease.ErrExpiredInFlight) {
			continue // the lock was granted too late and given back: queue again
		}
		if retry.Wait(ctx, retry.Delay(o.RetryMin, o.RetryMax), nil) != nil {
			if l.lc.Closed() {
				return nil, errors.Join(distlock.ErrClosed, last)
			}
			return nil, ended(ctx, last)
		}
	}
}

// ended is retry.Ended (an error matching distlock.ErrNotAcquired and
// ctx.Err(), joined with last; nil while ctx has not ended) that also
// keeps ctx's cause when it differs from ctx.Err().
func ended(ctx context.Context, last error) error {
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		last = errors.Join(cause, last)
	}
	return retry.Ended(ctx, last)
}

// maxStale bounds how many pooled connections one acquisition may find
// ended for idleness (see endedIdle) before it gives up.
const maxStale = 3

// testHookAfterGet, set by tests only, runs on the connection an
// acquisition took from the pool, before its statements.
var testHookAfterGet func(*conn)

// testHookAfterWait, set by tests only, runs after a blocking lock
// statement returns.
var testHookAfterWait func()

// lockOn runs one lock statement on c and grants the lease. On any
// failure c is closed (a session whose lock state is in doubt is never
// reused; in the background if ctx has ended, see pool.discard), except
// that a TryAcquire that finds the key held returns c to the pool.
func (l *Locker) lockOn(ctx context.Context, c *conn, key string, id int64, o distlock.Options, wait bool, since time.Time) (distlock.Lease, error) {
	if wait {
		if !l.track(c) {
			c.close()
			return nil, distlock.ErrClosed
		}
	}
	start := since // the validity counts from here (before the first request)
	var r grantResult
	var err error
	if wait {
		stop := l.watchWait(c, o.TTL)
		r, err = l.lockStatement(ctx, c, id, o.TTL, wait)
		cut := stop()
		if testHookAfterWait != nil {
			testHookAfterWait()
		}
		if l.untrack(c) {
			// Close ran while we waited: it may have set a past deadline
			// on c, which a grant racing it would carry into its lease.
			c.close() // frees such a grant
			return nil, errors.Join(distlock.ErrClosed, err)
		}
		if cut != nil {
			c.close() // frees a grant that raced the cut
			return nil, wrap("wait for "+strconv.Quote(key), cut)
		}
	} else {
		err = request(ctx, l.opts.RequestTimeout, func(ctx context.Context) error {
			r, err = l.lockStatement(ctx, c, id, o.TTL, wait)
			return err
		})
	}
	if err != nil {
		l.pool.discard(ctx, c) // in the background if ctx has ended: return now
		return nil, l.lockError(ctx, key, err)
	}
	if !r.got {
		if l.opts.Mode == ModeTransaction {
			if err := request(ctx, l.opts.RequestTimeout, func(ctx context.Context) error {
				_, err := c.Exec(ctx, "ROLLBACK")
				return err
			}); err != nil {
				l.pool.discard(ctx, c)
				return nil, fmt.Errorf("%w: pgadvisory: key %q is held", distlock.ErrNotAcquired, key)
			}
		}
		l.pool.put(c)
		return nil, fmt.Errorf("%w: pgadvisory: key %q is held", distlock.ErrNotAcquired, key)
	}
	if l.opts.Mode == ModeSession && r.pid != c.pid {
		// A pooler ran the lock on another server connection: end that
		// one if we may, so the lock does not stay behind.
		_ = request(context.WithoutCancel(ctx), l.opts.RequestTimeout, func(ctx context.Context) error {
			_, err := c.Exec(ctx, "SELECT pg_terminate_backend($1)", int64(r.pid))
			return err
		})
		c.close()
		return nil, &PoolerError{ConnPID: c.pid, BackendPID: r.pid}
	}
	if wait && time.Since(start) > o.TTL/10 {
		// A long wait: the server's idle clock started at the grant, not at
		// the request. Confirm now so the validity counts from here.
		start = time.Now()
		if err := request(ctx, l.opts.RequestTimeout, func(ctx context.Context) error {
			return l.heartbeat(ctx, c, o.TTL, r.pid)
		}); err != nil {
			l.pool.discard(ctx, c)
			return nil, wrap("confirm after wait", errors.Join(err, errUnknown))
		}
	}
	h := l.startHold(c, key, id, r.pid, validity.Until(start, o.TTL, validity.DefaultDrift(o.TTL)))
	ls, err := lease.Grant(ctx, lease.Config{
		Key: key, Token: lease.NewToken(), Fence: r.fence, Start: start,
		ValidUntil: validity.Until(start, o.TTL, validity.DefaultDrift(o.TTL)),
		Options:    o,
		Driver:     h,
		Group:      l.lc.Watchdogs(),
	})
	if err != nil {
		return nil, err
	}
	h.attach(ls)
	return ls, nil
}

// lockStatement sends the lock statement: one round trip (transaction
// mode: BEGIN, the TTL setting and the lock in one batch).
func (l *Locker) lockStatement(ctx context.Context, c *conn, id int64, ttl time.Duration, wait bool) (grantResult, error) {
	var got bool
	var fence int64
	var pid int32
	c.sent = time.Now()
	if l.opts.Mode == ModeSession {
		if c.timeout == msSetting(ttl) { // the session's TTL settings are this TTL's already
			q := l.sql.tryKept
			if wait {
				q = l.sql.waitKept
			}
			err := c.QueryRow(ctx, q, id).Scan(&got, &fence, &pid)
			return grantResult{got, uint64(fence), uint32(pid)}, err
		}
		q := l.sql.try
		if wait {
			q = l.sql.wait
		}
		var setting *string
		err := c.QueryRow(ctx, q, append([]any{id}, ttlArgs(ttl)...)...).Scan(&got, &fence, &pid, &setting)
		if err == nil && got {
			c.setTimeout(ttl)
		}
		return grantResult{got, uint64(fence), uint32(pid)}, err
	}
	q := l.sql.xtry
	if wait {
		q = l.sql.xwait
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(l.sql.xsettings, ttlArgs(ttl)...)
	b.Queue(q, id)
	br := c.SendBatch(ctx, b)
	_, err1 := br.Exec()
	_, err2 := br.Exec()
	err3 := br.QueryRow().Scan(&got, &fence, &pid)
	err := errors.Join(err1, err2, err3, br.Close())
	return grantResult{got, uint64(fence), uint32(pid)}, err
}

// heartbeat runs the heartbeat statement on a connection no monitor
// watches yet.
func (l *Locker) heartbeat(ctx context.Context, c *conn, ttl time.Duration, pid uint32) error {
	q := l.sql.heartbeat
	if l.opts.Mode == ModeTransaction {
		q = l.sql.xheartbeat
	}
	var p int32
	var setting string
	if err := c.QueryRow(ctx, q, ttlArgs(ttl)...).Scan(&p, &setting); err != nil {
		return err
	}
	if uint32(p) != pid {
		return &PoolerError{ConnPID: pid, BackendPID: uint32(p), Lease: true}
	}
	if l.opts.Mode == ModeSession {
		c.setTimeout(ttl)
	}
	return nil
}
