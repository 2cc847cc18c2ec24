package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redlock"
)

// testLocalTurns: calls of one Locker on one key take turns locally: a
// second Acquire waits without I/O and gets the key when the first lease
// ends (released or expired); TryAcquire fails at once; a local waiter
// that gives up does not block the next; Close wakes local waiters.
func (c *cluster) testLocalTurns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := c.locker(t, "a", nil)
	key := uniqueKey(t)
	first := mustAcquire(t, l, key)

	_, err := l.TryAcquire(ctx, key)
	wantErr(t, err, distlock.ErrNotAcquired)
	var qe *redlock.QuorumError
	if errors.As(err, &qe) {
		t.Fatalf("TryAcquire behind a local holder went to the nodes: %v", err)
	}

	// A local waiter that gives up leaves no trace.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = l.Acquire(short, key)
	cancel()
	wantErr(t, err, distlock.ErrNotAcquired)
	wantErr(t, err, context.DeadlineExceeded)

	got := make(chan distlock.Lease, 1)
	go func() {
		ls, err := l.Acquire(ctx, key, distlock.WithTTL(300*time.Millisecond))
		if err != nil {
			t.Errorf("second Acquire: %v", err)
		}
		got <- ls
	}()
	select {
	case <-got:
		t.Fatal("second Acquire returned while the first lease was held")
	case <-time.After(100 * time.Millisecond):
	}
	released := time.Now()
	mustRelease(t, first)
	second := <-got
	if second == nil {
		return
	}
	t.Logf("local hand-off took %v", time.Since(released))
	if second.Fence() <= first.Fence() {
		t.Fatalf("fence %d after %d", second.Fence(), first.Fence())
	}
	// Expiry (300 ms, no extension) ends the lease and frees the turn.
	third, err := l.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("Acquire after the local lease expired: %v", err)
	}
	wantErr(t, second.Err(), distlock.ErrLeaseLost)
	if third.Fence() <= second.Fence() {
		t.Fatalf("fence %d after %d", third.Fence(), second.Fence())
	}

	// Close wakes a local waiter with ErrClosed.
	closed := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, key)
		closed <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-closed:
		wantErr(t, err, distlock.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake the local waiter")
	}
}
