package pgadvisory_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// TestAcquireOnFrozenServer: with the server frozen (its container
// paused: connections stay open, nothing answers), a blocking Acquire
// returns by its deadline, whether its statement was sent on a pooled
// connection or it was still connecting, with an error matching
// ErrNotAcquired and DeadlineExceeded; once the server thaws, no lock or
// waiter of it is left on the server.
func TestAcquireOnFrozenServer(t *testing.T) {
	s := startPostgres(t)
	pooled := s.locker(t, "pooled", nil)
	key := uniqueKey(t)
	mustRelease(t, mustAcquire(t, pooled, key)) // a pooled connection, the fence sequence ready
	fresh := s.locker(t, "fresh", nil)
	mustFault(t, s.node.Pause)
	thawed := false
	t.Cleanup(func() {
		if !thawed {
			mustFault(t, s.node.Unpause)
		}
	})
	const deadline, slack = time.Second, 300 * time.Millisecond
	for _, c := range []struct {
		name string
		l    distlock.Locker
	}{{"pooled", pooled}, {"connecting", fresh}} {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		start := time.Now()
		_, err := c.l.Acquire(ctx, key)
		took := time.Since(start)
		cancel()
		wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
		if took > deadline+slack {
			t.Errorf("%s: Acquire with a %v deadline on a frozen server returned after %v", c.name, deadline, took.Round(time.Millisecond))
		} else {
			t.Logf("%s: returned after %v", c.name, took.Round(time.Millisecond))
		}
	}
	mustFault(t, s.node.Unpause)
	thawed = true
	id := pooled.KeyID(key)
	eventually(t, 10*time.Second, "a frozen-out Acquire left a lock or a waiter behind", func() bool {
		held, waiting := s.holders(t, id)
		return len(held) == 0 && len(waiting) == 0
	})
	mustRelease(t, mustAcquire(t, pooled, key))
}
