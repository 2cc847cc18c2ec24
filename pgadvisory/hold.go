package pgadvisory

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock/internal/lease"
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

// hold is one held lock on its pinned connection, and the lease's Driver
// (driver.go). While nothing else uses the connection (from monitorDelay
// after the acquisition or the last heartbeat), its monitor blocks
// reading it: a server that ends the connection's session
// (pg_terminate_backend, a restart, the idle timeout) or a dropped
// connection is noticed at once and the lease reported lost. The monitor
// also closes the connection once the lease has expired, so the server
// frees the lock without waiting for its own timeout. Extend and Release
// take the connection from the monitor (a read deadline in the past ends
// its run), run their statement, and a heartbeat schedules the next run.
type hold struct {
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
	lost       error // why the hold ended, once it has
	connClosed bool
}

// startHold starts watching c, which holds lock id for key until
// validUntil.
func (l *Locker) startHold(c *conn, key string, id int64, pid uint32, validUntil time.Time) *hold {
	h := &hold{
		l: l, c: c, nc: c.PgConn().Conn(), key: key, id: id, pid: pid, mode: l.opts.Mode,
		validUntil: validUntil,
	}
	h.mu.Lock()
	h.arm()
	h.mu.Unlock()
	return h
}

// arm schedules the next monitor run, monitorDelay from now, on the
// Locker's starter. h.mu is held.
func (h *hold) arm() {
	delay := monitorDelay
	if testHookMonitorDelay != nil {
		delay = testHookMonitorDelay()
	}
	done := make(chan struct{})
	h.run = &monitorRun{at: time.Now().Add(delay), start: func() { h.monitor(done) }, done: done}
	h.l.starter.add(h.run)
}

// attach gives the hold its lease, reporting a loss seen before.
func (h *hold) attach(ls *lease.Lease) {
	h.vmu.Lock()
	h.ls = ls
	lost := h.lost
	h.vmu.Unlock()
	if lost != nil {
		ls.Lose(lost)
	}
}

// monitor owns the connection whenever no request does (see hold),
// until a request wants it (then it exits) or the hold ends. done is
// this run's channel, closed when it exits.
func (h *hold) monitor(done chan struct{}) {
	defer close(done)
	for {
		_ = h.nc.SetReadDeadline(h.deadline())
		if h.want.Load() { // the requester's deadline may have been overwritten
			return
		}
		err := h.c.PgConn().WaitForNotification(context.Background())
		switch {
		case err == nil:
			continue // a notification: nobody listens on this connection
		case !isTimeout(err):
			h.end(fmt.Errorf("pgadvisory: the server session holding %q ended: %w", h.key, err))
			return
		case h.want.Load():
			return
		case h.expired():
			h.end(nil)
			return
		}
	}
}

// deadline is when the monitor must look at the lease again: its
// validity end.
func (h *hold) deadline() time.Time {
	h.vmu.Lock()
	vu, ls := h.validUntil, h.ls
	h.vmu.Unlock()
	if ls != nil && ls.Err() != nil {
		return time.Now()
	}
	if time.Until(vu) <= 0 {
		return time.Now().Add(expiryPoll)
	}
	return vu
}

// expired reports whether the lease is over (its expiry timer fired).
func (h *hold) expired() bool {
	h.vmu.Lock()
	ls := h.ls
	h.vmu.Unlock()
	return ls != nil && ls.Err() != nil
}

// end reports the lease lost if cause is not nil, then closes the
// connection (which frees the lock). Only the monitor, or a requester
// holding the connection, calls it.
func (h *hold) end(cause error) {
	h.vmu.Lock()
	if h.lost == nil {
		h.lost = cause
		if cause == nil {
			h.lost = lease.ErrExpired
		}
	}
	ls, closed := h.ls, h.connClosed
	h.connClosed = true
	h.vmu.Unlock()
	if cause != nil && ls != nil {
		ls.Lose(cause) // before the close frees the lock for someone else
	}
	if !closed {
		h.c.close()
	}
}

// lose reports the lease lost with cause, before a request that will
// close the connection is interrupted (see guard).
func (h *hold) lose(cause error) {
	h.vmu.Lock()
	if h.lost == nil {
		h.lost = cause
	}
	ls := h.ls
	h.vmu.Unlock()
	if ls != nil {
		ls.Lose(cause)
	}
}

// lostCause says why the hold ended.
func (h *hold) lostCause() error {
	h.vmu.Lock()
	defer h.vmu.Unlock()
	if h.lost == nil {
		return errors.New("connection closed")
	}
	return h.lost
}

// take gets the connection from the monitor: if its run has not started,
// it never will; else the monitor is woken (a read deadline in the past)
// and waited for. It returns false if the hold is over (the monitor
// ended it). h.mu is held.
func (h *hold) take() bool {
	// No run: the connection is ours already (a failed heartbeat ended
	// the hold without handing it back); there is no run to wait for.
	r := h.run
	h.run = nil
	if r != nil && !r.cancel() {
		h.want.Store(true)
		_ = h.nc.SetReadDeadline(time.Now())
		<-r.done
		h.want.Store(false)
	}
	h.vmu.Lock()
	closed := h.connClosed
	h.vmu.Unlock()
	if closed {
		return false
	}
	_ = h.nc.SetReadDeadline(time.Time{}) // after ours and the monitor's
	return true
}

// give hands the connection back to the monitor after a heartbeat.
// h.mu is held.
func (h *hold) give() { h.arm() }

// isTimeout reports a read deadline passing.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
