package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/zklock"
)

// testFIFO: waiters queued in order are served in order, each woken by
// its predecessor's release, and each watches only its own node and its
// predecessor.
func testFIFO(t *testing.T, e *ensemble) {
	const n = 6
	key := uniqueKey(t)
	holder := e.locker(t, "holder", nil)
	first := mustAcquire(t, holder, key)
	watchesBefore := e.watches(t)
	lockers := make([]*zklock.Locker, n)
	for i := range lockers {
		lockers[i] = e.locker(t, fmt.Sprint("w", i), nil)
	}
	var mu sync.Mutex
	var order []int
	var fences []uint64
	var wg sync.WaitGroup
	for i, l := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ls, err := l.Acquire(context.Background(), key)
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			fences = append(fences, ls.Fence())
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			_ = ls.Release(context.Background())
		}()
		want := i + 2
		eventually(t, 10*time.Second, "waiter did not queue", func() bool { return len(e.lockNodes(t, key)) == want })
	}
	// Each waiter: a watch on its own node and one on its predecessor;
	// the holder: one on its own node. A waiter's node appears before its
	// watches are set, so wait for them; more than 2 per waiter is a herd.
	eventually(t, 10*time.Second, "waiters' watches not set", func() bool { return e.watches(t)-watchesBefore >= 2*n })
	if w := e.watches(t) - watchesBefore; w != 2*n {
		t.Errorf("%d new watches for %d waiters, want %d (own + predecessor each)", w, n, 2*n)
	}
	mustRelease(t, first)
	wg.Wait()
	for i := range order {
		if order[i] != i {
			t.Fatalf("served in order %v, want arrival order", order)
		}
		if i > 0 && fences[i] <= fences[i-1] {
			t.Fatalf("fences %v not increasing", fences)
		}
	}
	if n := e.lockNodes(t, key); len(n) != 0 {
		t.Fatalf("nodes left: %v", n)
	}
}

// testCancel: a waiter whose context ends, by deadline or by
// cancellation, returns ErrNotAcquired with the context's error within
// moments and its node goes; TryAcquire with an ended context does
// nothing.
func testCancel(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	held := mustAcquire(t, e.locker(t, "a", nil), key)
	defer mustRelease(t, held)
	b := e.locker(t, "b", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := b.Acquire(ctx, key)
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancelled Acquire returned after %v", d)
	}
	eventually(t, 5*time.Second, "the cancelled waiter's node stayed", func() bool { return len(e.lockNodes(t, key)) == 1 })
	// A context cancelled mid-wait, not by deadline.
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel2() }()
	_, err = b.Acquire(ctx2, key)
	wantErr(t, err, distlock.ErrNotAcquired, context.Canceled)
	eventually(t, 5*time.Second, "the cancelled waiter's node stayed", func() bool { return len(e.lockNodes(t, key)) == 1 })
	// An already cancelled context does nothing.
	_, err = b.TryAcquire(ctx2, key)
	wantErr(t, err, distlock.ErrNotAcquired, context.Canceled)
}

// errGaveUp is the cause the tests give their contexts.
var errGaveUp = errors.New("the caller gave up")

// testCauseContexts: a context made with WithCancelCause or
// WithTimeoutCause ends a queued Acquire, or a TryAcquire, with an error
// that matches distlock.ErrNotAcquired, ctx.Err() and the cause, and
// leaves no node behind.
func testCauseContexts(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	const ttl = 5 * time.Second
	a, b := e.locker(t, "a", nil), e.locker(t, "b", nil)
	held := mustAcquire(t, a, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))
	defer mustRelease(t, held)
	queueEmpties := func(t *testing.T) {
		t.Helper()
		eventually(t, 5*time.Second, "the waiter's node stayed", func() bool { return len(e.lockNodes(t, key)) == 1 })
	}

	t.Run("WithCancelCause", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		go func() {
			deadline := time.Now().Add(10 * time.Second)
			for len(e.lockNodes(t, key)) < 2 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			cancel(errGaveUp) // queued by now, or the test fails below
		}()
		start := time.Now()
		_, err := b.Acquire(ctx, key, distlock.WithTTL(ttl))
		if time.Since(start) > 9*time.Second {
			t.Fatalf("the waiter never queued: %v", err)
		}
		wantErr(t, err, distlock.ErrNotAcquired, context.Canceled, errGaveUp)
		queueEmpties(t)
	})

	t.Run("WithTimeoutCause", func(t *testing.T) {
		ctx, cancel := context.WithTimeoutCause(context.Background(), time.Second, errGaveUp)
		defer cancel()
		_, err := b.Acquire(ctx, key, distlock.WithTTL(ttl))
		wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded, errGaveUp)
		queueEmpties(t)
	})

	t.Run("TryAcquireEnded", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(errGaveUp)
		_, err := b.TryAcquire(ctx, key, distlock.WithTTL(ttl))
		wantErr(t, err, distlock.ErrNotAcquired, context.Canceled, errGaveUp)
		ctx, cancel2 := context.WithTimeoutCause(context.Background(), -time.Second, errGaveUp)
		defer cancel2()
		_, err = b.Acquire(ctx, key, distlock.WithTTL(ttl))
		wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded, errGaveUp)
	})
}
