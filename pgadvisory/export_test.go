package pgadvisory

import (
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
func Closing(l *Locker) bool { return l.isClosed() }
