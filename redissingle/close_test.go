package redissingle_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redissingle"
)

// TestClose checks that Close wakes a blocked Acquire with ErrClosed, is
// idempotent, refuses later calls with ErrClosed, leaves the caller's
// client open, and that a lease outlives its Locker.
func TestClose(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	c := newClient(t, s.node.Addr())
	l, err := redissingle.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := uniqueKey(t)
	held := mustAcquire(t, l, key)
	other := s.locker(t, "b", nil)
	blocked := make(chan error, 1)
	go func() {
		// A waiter of the Locker being closed.
		_, err := l.Acquire(ctx, key)
		blocked <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-blocked:
		wantErr(t, err, distlock.ErrClosed)
	case <-time.After(2 * time.Second):
		t.Fatal("blocked Acquire not woken by Close")
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err = l.Acquire(ctx, key)
	wantErr(t, err, distlock.ErrClosed)
	_, err = l.TryAcquire(ctx, key)
	wantErr(t, err, distlock.ErrClosed)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("Close closed the caller's client: %v", err)
	}
	mustRelease(t, held) // a lease outlives its Locker while the client is open
	mustRelease(t, mustAcquire(t, other, key))
	s.noLeftovers(t, key)
}
