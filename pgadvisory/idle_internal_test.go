package pgadvisory

import (
	"testing"
	"time"
)

// TestIdleDeadlines: a connection that kept a timeout is reset at
// timeout - 2*margin of idle time and no longer used from timeout -
// margin (margin t/4, at most 1 s); one without a timeout never expires.
func TestIdleDeadlines(t *testing.T) {
	sent := time.Unix(1000, 0)
	for _, tc := range []struct {
		ttl           time.Duration
		reset, refuse time.Duration
	}{
		{400 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond},
		{30 * time.Second, 28 * time.Second, 29 * time.Second},
	} {
		c := &conn{sent: sent}
		c.setTimeout(tc.ttl)
		if got := c.resetAt().Sub(sent); got != tc.reset {
			t.Errorf("timeout %v: reset after %v idle, want %v", tc.ttl, got, tc.reset)
		}
		if c.expiring(sent.Add(tc.refuse - time.Millisecond)) {
			t.Errorf("timeout %v: expiring before %v idle", tc.ttl, tc.refuse)
		}
		if !c.expiring(sent.Add(tc.refuse)) {
			t.Errorf("timeout %v: not expiring after %v idle", tc.ttl, tc.refuse)
		}
	}
	if (&conn{sent: sent}).expiring(sent.Add(time.Hour)) {
		t.Error("a connection without a timeout expires")
	}
}
