package memlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/memlock"
)

// TestAcquireWokenByRelease checks that a blocked Acquire is handed the key
// by the release itself: its retry delay is seconds long, so only the push
// wake-up can make the hand-off quick.
func TestAcquireWokenByRelease(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	a := hold(t, l, "k")
	got := make(chan error, 1)
	go func() {
		b, err := l.Acquire(ctx, "k", distlock.WithRetryDelay(5*time.Second, 5*time.Second))
		if err == nil {
			_ = b.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	_ = a.Release(ctx)
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("acquire failed: %v", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("hand-off took %v", d)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("waiter not woken by release")
	}
}

// TestAcquireWokenByExpiry checks that a waiter is woken by the holder's
// TTL running out, well before any poll would have found the key free.
func TestAcquireWokenByExpiry(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	a := hold(t, l, "k", distlock.WithTTL(50*time.Millisecond))
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	b, err := l.NewHandle().Acquire(wctx, "k")
	if err != nil {
		t.Fatalf("waiter not woken by expiry: %v", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("woken after %v, TTL 50ms", d)
	}
	_ = b.Release(ctx)
	_ = a.Release(ctx)
}

// TestAcquireContextEnds checks that a blocked Acquire whose context ends
// returns an error matching ErrNotAcquired and the context's error.
func TestAcquireContextEnds(t *testing.T) {
	l := memlock.New(nil)
	a := hold(t, l, "k")
	defer a.Release(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := l.Acquire(ctx, "k")
	if !errors.Is(err, distlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
}
