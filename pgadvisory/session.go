package pgadvisory

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/validity"
)

// expiryPoll is how soon the monitor looks again when the validity has
// passed but the lease's own expiry timer has not fired yet.
const expiryPoll = 5 * time.Millisecond

// monitorDelay is how long after an acquisition (or a heartbeat) the
// monitor starts reading the connection. A lease released sooner never
// starts one, so a short critical section costs no goroutine hand-offs; a
// session that ends meanwhile is noticed when the monitor starts.
const monitorDelay = 2 * time.Millisecond

// testHookMonitorDelay, set only by tests (nil in production), replaces
// monitorDelay: a test can keep the monitor from starting, so that a
// heartbeat rather than the monitor finds the server session gone.
var testHookMonitorDelay func() time.Duration

// session is one held lock on its pinned connection, and the lease's
// Driver. While nothing else uses the connection (from monitorDelay after
// the acquisition or the last heartbeat), its monitor blocks reading it: a server that ends the session (pg_terminate_backend,
// a restart, the idle timeout) or a dropped connection is noticed at once
// and the lease reported lost. The monitor also closes the connection once
// the lease has expired, so the server frees the lock without waiting for
// its own timeout. Extend and Release take the connection from the
// monitor (a read deadline in the past ends its run), run their statement,
// and a heartbeat schedules the next run.
type session struct {
	l    *Locker
	c    *conn
	nc   net.Conn
	key  string
	id   int64
	pid  uint32 // the backend holding the lock
	mode Mode

	mu       sync.Mutex // serialises Extend and Release
	finished bool       // Release ran

	want atomic.Bool // a request waits for the connection: the monitor exits
	run  *monitorRun // the next monitor run, not yet taken back; guarded by mu

	vmu        sync.Mutex
	validUntil time.Time
	ls         *lease.Lease
	lost       error // why the session ended, once it has
	connClosed bool
}

// startSession starts watching c, which holds lock id for key until
// validUntil.
func (l *Locker) startSession(c *conn, key string, id int64, pid uint32, validUntil time.Time) *session {
	s := &session{
		l: l, c: c, nc: c.PgConn().Conn(), key: key, id: id, pid: pid, mode: l.opts.Mode,
		validUntil: validUntil,
	}
	s.mu.Lock()
	s.arm()
	s.mu.Unlock()
	return s
}

// arm schedules the next monitor run, monitorDelay from now, on the
// Locker's starter. s.mu is held.
func (s *session) arm() {
	delay := monitorDelay
	if testHookMonitorDelay != nil {
		delay = testHookMonitorDelay()
	}
	done := make(chan struct{})
	s.run = &monitorRun{at: time.Now().Add(delay), start: func() { s.monitor(done) }, done: done}
	s.l.starter.add(s.run)
}

// attach gives the session its lease, reporting a loss seen before.
func (s *session) attach(ls *lease.Lease) {
	s.vmu.Lock()
	s.ls = ls
	lost := s.lost
	s.vmu.Unlock()
	if lost != nil {
		ls.Lose(lost)
	}
}

// monitor owns the connection whenever no request does (see session),
// until a request wants it (then it exits) or the session ends. done is
// this run's channel, closed when it exits.
func (s *session) monitor(done chan struct{}) {
	defer close(done)
	for {
		_ = s.nc.SetReadDeadline(s.deadline())
		if s.want.Load() { // the requester's deadline may have been overwritten
			return
		}
		err := s.c.PgConn().WaitForNotification(context.Background())
		switch {
		case err == nil:
			continue // a notification: nobody listens on this connection
		case !isTimeout(err):
			s.end(fmt.Errorf("pgadvisory: the server session holding %q ended: %w", s.key, err))
			return
		case s.want.Load():
			return
		case s.expired():
			s.end(nil)
			return
		}
	}
}

// deadline is when the monitor must look at the lease again: its
// validity end.
func (s *session) deadline() time.Time {
	s.vmu.Lock()
	vu, ls := s.validUntil, s.ls
	s.vmu.Unlock()
	if ls != nil && ls.Err() != nil {
		return time.Now()
	}
	if time.Until(vu) <= 0 {
		return time.Now().Add(expiryPoll)
	}
	return vu
}

// expired reports whether the lease is over (its expiry timer fired).
func (s *session) expired() bool {
	s.vmu.Lock()
	ls := s.ls
	s.vmu.Unlock()
	return ls != nil && ls.Err() != nil
}

// end reports the lease lost if cause is not nil, then closes the
// connection (which frees the lock). Only the monitor, or a requester
// holding the connection, calls it.
func (s *session) end(cause error) {
	s.vmu.Lock()
	if s.lost == nil {
		s.lost = cause
		if cause == nil {
			s.lost = lease.ErrExpired
		}
	}
	ls, closed := s.ls, s.connClosed
	s.connClosed = true
	s.vmu.Unlock()
	if cause != nil && ls != nil {
		ls.Lose(cause) // before the close frees the lock for someone else
	}
	if !closed {
		s.c.close()
	}
}

// lose reports the lease lost with cause, before a request that will
// close the connection is interrupted (see guard).
func (s *session) lose(cause error) {
	s.vmu.Lock()
	if s.lost == nil {
		s.lost = cause
	}
	ls := s.ls
	s.vmu.Unlock()
	if ls != nil {
		ls.Lose(cause)
	}
}

// lostCause says why the session ended.
func (s *session) lostCause() error {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	if s.lost == nil {
		return errors.New("connection closed")
	}
	return s.lost
}

// take gets the connection from the monitor: if its run has not started,
// it never will; else the monitor is woken (a read deadline in the past)
// and waited for. It returns false if the session is over (the monitor
// ended it). s.mu is held.
func (s *session) take() bool {
	// No run: the connection is ours already (a failed heartbeat ended
	// the session without handing it back); there is no run to wait for.
	r := s.run
	s.run = nil
	if r != nil && !r.cancel() {
		s.want.Store(true)
		_ = s.nc.SetReadDeadline(time.Now())
		<-r.done
		s.want.Store(false)
	}
	s.vmu.Lock()
	closed := s.connClosed
	s.vmu.Unlock()
	if closed {
		return false
	}
	_ = s.nc.SetReadDeadline(time.Time{}) // after ours and the monitor's
	return true
}

// give hands the connection back to the monitor after a heartbeat.
// s.mu is held.
func (s *session) give() { s.arm() }

// Extend implements lease.Driver: a heartbeat that resets the server's
// idle timeout to ttl and checks that the same backend still holds the
// session. Any failure closes the connection (which frees the lock) and
// reports the lease lost: a heartbeat whose outcome is unknown cannot be
// trusted to have kept the lock. A heartbeat that ctx or the request
// timeout ends reports the lease lost first (see guard); its error
// matches distlock.ErrLeaseLost and distlock.ErrUnavailable. A ttl above
// MaxTTL is refused (distlock.ErrInvalidArgument) without a request, and
// the lease goes on unchanged.
func (s *session) Extend(ctx context.Context, ttl time.Duration) (time.Time, error) {
	if err := checkTTL(ttl); err != nil {
		return time.Time{}, err // the lease goes on as it was
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished || !s.take() {
		return time.Time{}, fmt.Errorf("%w: pgadvisory: %q: %w", distlock.ErrLeaseLost, s.key, s.lostCause())
	}
	start := time.Now()
	q := s.l.sql.heartbeat
	if s.mode == ModeTransaction {
		q = s.l.sql.xheartbeat
	}
	var pid int32
	var setting string
	hctx, done := s.guard(ctx)
	err := s.c.QueryRow(hctx, q, ttlArgs(ttl)...).Scan(&pid, &setting)
	if why := done(); why != nil {
		// Reported lost before the connection was closed: even a reply
		// that came in time is not trusted.
		s.end(nil)
		return time.Time{}, fmt.Errorf("%w: %w: pgadvisory: heartbeat of %q: %w (connection closed, freeing the lock)",
			distlock.ErrLeaseLost, distlock.ErrUnavailable, s.key, why)
	}
	if err == nil && uint32(pid) != s.pid {
		err = &PoolerError{ConnPID: s.pid, BackendPID: uint32(pid), Lease: true}
	}
	if err == nil && s.mode == ModeSession {
		s.c.setTimeout(ttl)
	}
	if err != nil {
		err = fmt.Errorf("pgadvisory: heartbeat of %q failed, connection closed: %w", s.key, err)
		s.end(err)
		return time.Time{}, fmt.Errorf("%w: %w", distlock.ErrLeaseLost, err)
	}
	vu := validity.Until(start, ttl, validity.DefaultDrift(ttl))
	s.vmu.Lock()
	s.validUntil = vu
	s.vmu.Unlock()
	s.give()
	return vu, nil
}

// Release implements lease.Driver: a checked unlock (session mode) or a
// commit (transaction mode), bounded by the request timeout. If the
// unlock's outcome is in doubt (no reply in time, ctx ended), the
// connection is closed rather than returned to the pool, so the lock
// cannot be left behind or stacked, and the error matches
// distlock.ErrUnavailable.
func (s *session) Release(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return nil
	}
	s.finished = true
	if !s.take() {
		return fmt.Errorf("%w: pgadvisory: %q: %w", distlock.ErrLeaseLost, s.key, s.lostCause())
	}
	var held bool
	var pid uint32
	err := request(ctx, s.l.opts.RequestTimeout, func(ctx context.Context) (err error) {
		held, pid, err = s.unlock(ctx)
		return err
	})
	switch {
	case err != nil:
		s.end(nil)
		if sessionEnded(err) {
			return fmt.Errorf("%w: pgadvisory: %q: the server session ended: %w", distlock.ErrLeaseLost, s.key, err)
		}
		if ctx.Err() != nil {
			err = errors.Join(err, ctxError(ctx))
		}
		return fmt.Errorf("%w: pgadvisory: release %q: %w: %w", distlock.ErrUnavailable, s.key, errUnknown, err)
	case pid != s.pid:
		s.end(nil)
		return fmt.Errorf("%w: %w", distlock.ErrLeaseLost, &PoolerError{ConnPID: s.pid, BackendPID: pid, Lease: true})
	case !held:
		s.end(nil)
		return fmt.Errorf("%w: pgadvisory: %q was no longer held by this session", distlock.ErrLeaseLost, s.key)
	}
	s.l.pool.put(s.c)
	return nil
}

// unlock runs the release statement(s) and reports whether the lock was
// held and by which backend.
func (s *session) unlock(ctx context.Context) (held bool, pid uint32, err error) {
	var p int32
	s.c.sent = time.Now()
	if s.mode == ModeSession {
		err = s.c.QueryRow(ctx, s.l.sql.unlock, s.id).Scan(&held, &p)
		return held, uint32(p), err
	}
	b := &pgx.Batch{}
	b.Queue("SELECT pg_backend_pid()")
	b.Queue("COMMIT")
	br := s.c.SendBatch(ctx, b)
	err = br.QueryRow().Scan(&p)
	tag, cerr := br.Exec()
	err = errors.Join(err, cerr, br.Close())
	// A transaction that had failed ends with ROLLBACK: its lock was gone.
	return err == nil && tag.String() == "COMMIT", uint32(p), err
}

// isTimeout reports a read deadline passing.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
