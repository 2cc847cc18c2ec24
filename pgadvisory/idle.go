package pgadvisory

import (
	"context"
	"sync"
	"time"

	"github.com/distlock/distlock/internal/stop"
)

// A session-mode lease sets its session's TTL settings (timeouts.go:
// idle_session_timeout, so the server ends the session of a holder that
// stops heartbeating, and the TCP timeouts that must not end it sooner).
// Setting them costs the server more than the lock itself, so a released
// connection keeps its lease's settings in the pool, and the next lease
// with the same TTL skips them.
// An idle connection with a timeout must not sit idle until the server
// ends it:
//
//   - get never hands out one idle for more than timeout - margin (the
//     next statement must reach the server before its timeout);
//   - the pool's sweep resets the timeout to 0 on connections idle for
//     timeout - 2*margin, so a quiet pool keeps its connections alive
//     (and the server's log stays free of idle-session terminations).
//
// Idle time counts from when the last statement was sent (conn.sent),
// which is before the server's idle clock started.

// resetSQL clears the TTL settings of an idle pooled connection: no idle
// timeout, and the liveness settings of setupSQL.
const resetSQL = "SELECT set_config('idle_session_timeout', '0', false) || set_config('tcp_user_timeout', '0', false) || " +
	"set_config('tcp_keepalives_idle', '" + livenessKeepaliveIdle + "', false)"

// resetTimeout bounds the sweep's reset statement.
const resetTimeout = time.Second

// idleMargin is how long before the server's idle timeout t get stops
// using a connection: t/4, at most 1 s.
func idleMargin(t time.Duration) time.Duration { return min(t/4, time.Second) }

// expiring reports whether c has been idle so long that the server may
// end it before the next statement arrives.
func (c *conn) expiring(now time.Time) bool {
	return c.timeout > 0 && now.Sub(c.sent) >= c.timeout-idleMargin(c.timeout)
}

// resetAt is when the sweep resets c's timeout if c is still idle.
func (c *conn) resetAt() time.Time {
	return c.sent.Add(c.timeout - 2*idleMargin(c.timeout))
}

// sweeper is the pool's timer for resetting idle connections' timeouts.
// Guarded by pool.mu, except running and stopping.
type sweeper struct {
	timer    *time.Timer
	at       time.Time // when timer fires; zero when none is armed
	gen      uint64    // the armed timer's generation
	running  sync.WaitGroup
	stopping *stop.Signal // fired by pool.close: resets in flight end at once
}

// armLocked makes sure a sweep runs at or before at. p.mu is held.
func (p *pool) armLocked(at time.Time) {
	w := &p.sweep
	if !w.at.IsZero() && !w.at.After(at) {
		return
	}
	p.disarmLocked()
	w.gen++
	gen := w.gen
	w.at = at
	w.running.Add(1)
	w.timer = time.AfterFunc(time.Until(at), func() { p.sweepIdle(gen) })
}

// disarmLocked stops the armed sweep if it has not started. p.mu is held.
func (p *pool) disarmLocked() {
	w := &p.sweep
	if w.timer != nil && w.timer.Stop() {
		w.running.Done()
	}
	w.timer, w.at = nil, time.Time{}
}

// sweepIdle takes the idle connections whose reset is due out of the pool,
// resets them and puts them back; then it arms the next sweep. gen is the
// run's timer generation: a run whose timer was replaced leaves the armed
// one alone.
func (p *pool) sweepIdle(gen uint64) {
	defer p.sweep.running.Done()
	now := time.Now()
	p.mu.Lock()
	if gen == p.sweep.gen {
		p.sweep.timer, p.sweep.at = nil, time.Time{}
	}
	var due []*conn
	kept := p.idle[:0]
	var next time.Time
	for _, c := range p.idle {
		switch {
		case c.timeout <= 0:
			kept = append(kept, c)
		case !now.Before(c.resetAt()):
			due = append(due, c)
		default:
			kept = append(kept, c)
			if at := c.resetAt(); next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	clear(p.idle[len(kept):])
	p.idle = kept
	if !next.IsZero() && !p.closed {
		p.armLocked(next)
	}
	p.mu.Unlock()
	for _, c := range due {
		p.reset(c)
	}
}

// testHookReset, set by tests only, runs as the sweep starts a reset.
var testHookReset func()

// reset clears c's idle timeout and returns it to the pool, or closes it
// if the statement fails.
func (p *pool) reset(c *conn) {
	if testHookReset != nil {
		testHookReset()
	}
	ctx, cancel := context.WithTimeout(p.sweep.stopping.Context(), resetTimeout)
	defer cancel()
	c.sent = time.Now()
	var setting string
	if err := c.QueryRow(ctx, resetSQL).Scan(&setting); err != nil {
		c.close()
		return
	}
	c.timeout = 0
	p.put(c)
}
