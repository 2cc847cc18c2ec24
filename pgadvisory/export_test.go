package pgadvisory

import (
	"context"
	"sync"
	"testing"
	"time"
)

// HoldMonitors keeps the lease monitors of the leases acquired from now
// until t ends from starting: nothing reads a held lock's connection
// between requests, so a server session that ends is found by the next
// heartbeat instead of by the monitor. t must not run in parallel with
// other tests.
func HoldMonitors(t testing.TB) {
	testHookMonitorDelay = func() time.Duration { return time.Hour }
	t.Cleanup(func() { testHookMonitorDelay = nil })
}

// SetHookAfterWait makes f run after every blocking lock statement
// returns, until t ends.
func SetHookAfterWait(t testing.TB, f func()) {
	testHookAfterWait = f
	t.Cleanup(func() { testHookAfterWait = nil })
}

// Closing reports whether Close has begun on l.
func Closing(l *Locker) bool { return l.lc.Closed() }

// EndIdleAfterGet makes the next connection an acquisition takes from the
// pool end for idleness (idle_session_timeout, SQLSTATE 57P05) before the
// acquisition's statement reaches the server, as a client pause longer
// than the pool's margin would, until t ends. It returns once the server
// has ended the session.
func EndIdleAfterGet(t testing.TB) { EndIdleAfterGets(t, 1) }

// EndIdleAfterGets is EndIdleAfterGet for the next n connections. The
// func it returns reports how many of the n are still to come.
func EndIdleAfterGets(t testing.TB, n int) (left func() int) {
	var mu sync.Mutex
	testHookAfterGet = func(c *conn) {
		mu.Lock()
		defer mu.Unlock()
		if n == 0 {
			return
		}
		n--
		if _, err := c.Exec(context.Background(), "SELECT set_config('idle_session_timeout', '50', false)"); err != nil {
			t.Errorf("set the idle timeout: %v", err)
		}
		for deadline := time.Now().Add(10 * time.Second); alive(c.PgConn().Conn()); {
			if time.Now().After(deadline) {
				t.Errorf("the server did not end the idle session")
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Cleanup(func() { testHookAfterGet = nil })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// MaxStale is how many pooled sessions ended for idleness one acquisition
// starts again after.
const MaxStale = maxStale

// SweepResets returns a channel that receives each time the pool's sweep
// starts resetting an idle connection's timeout, until t ends.
func SweepResets(t testing.TB) <-chan struct{} {
	ch := make(chan struct{}, 16)
	testHookReset = func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	t.Cleanup(func() { testHookReset = nil })
	return ch
}

// SetForcePause makes ForceRelease pause d between its reading of the
// holders and their termination, until t ends.
func SetForcePause(t testing.TB, d time.Duration) {
	testForcePause = d.Seconds()
	t.Cleanup(func() { testForcePause = 0 })
}

// QuoteEscaped is quoteEscaped.
var QuoteEscaped = quoteEscaped
