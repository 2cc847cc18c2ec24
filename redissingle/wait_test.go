package redissingle_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redissingle"
)

// slowRetry makes polling alone far slower than a push hand-off.
var slowRetry = distlock.WithRetryDelay(2*time.Second, 2*time.Second)

// TestWait checks blocking Acquire on one server: the hand-off is pushed,
// expired holders are noticed, cancellation, arrival order across Lockers,
// and the server's load per hand-off.
func TestWait(t *testing.T) {
	s := startRedis(t)
	t.Run("HandoffIsPushed", func(t *testing.T) { waitHandoffIsPushed(t, s) })
	t.Run("ExpiryFallback", func(t *testing.T) { waitExpiryFallback(t, s) })
	t.Run("CancelMatchesNotAcquiredAndCtx", func(t *testing.T) { waitCancel(t, s) })
	t.Run("FIFOAcrossLockers", func(t *testing.T) { waitFIFO(t, s) })
	t.Run("CommandsPerHandoffIndependentOfWaiters", func(t *testing.T) { waitCommandsPerHandoff(t, s) })
}

// waitHandoffIsPushed checks that a waiter gets the released key well
// within its retry delay, so by push, with a newer fence.
func waitHandoffIsPushed(t *testing.T, s *server) {
	t.Parallel()
	ctx := context.Background()
	a, b := s.locker(t, "a", nil), s.locker(t, "b", nil)
	key := uniqueKey(t)
	for range 5 {
		held := mustAcquire(t, a, key)
		got := acquireAsync(t, ctx, b, key, slowRetry)
		eventually(t, 5*time.Second, "waiter never queued", func() bool {
			return len(s.keysMatching(t, "distlock:*:q:"+key)) == 1
		})
		start := time.Now()
		mustRelease(t, held)
		ls := <-got
		if ls == nil {
			return
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Fatalf("hand-off took %v; the retry delay is 2s, so it was not pushed", d)
		}
		if ls.Fence() <= held.Fence() {
			t.Fatalf("fence %d after %d", ls.Fence(), held.Fence())
		}
		mustRelease(t, ls)
	}
	s.noLeftovers(t, key)
}

// waitExpiryFallback checks that a waiter takes the key soon after its
// holder expires without a release.
func waitExpiryFallback(t *testing.T, s *server) {
	t.Parallel()
	a, b := s.locker(t, "a", nil), s.locker(t, "b", nil)
	key := uniqueKey(t)
	held := mustAcquire(t, a, key, distlock.WithTTL(300*time.Millisecond))
	start := time.Now()
	ls := mustAcquire(t, b, key, distlock.WithRetryDelay(10*time.Millisecond, 20*time.Millisecond))
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("took %v after a 300ms TTL holder vanished", d)
	}
	<-held.Done()
	mustRelease(t, ls)
	s.noLeftovers(t, key)
}

// waitCancel checks that a cancelled or timed-out Acquire returns at once
// with an error matching ErrNotAcquired and the context's error, and that
// its queue entry is cleaned up.
func waitCancel(t *testing.T, s *server) {
	t.Parallel()
	ctx := context.Background()
	a, b := s.locker(t, "a", nil), s.locker(t, "b", nil)
	key := uniqueKey(t)
	held := mustAcquire(t, a, key)
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := b.Acquire(cctx, key)
	wantErr(t, err, distlock.ErrNotAcquired, context.Canceled)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Acquire returned %v after the cancel", d-200*time.Millisecond)
	}
	dctx, cancel2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel2()
	_, err = b.Acquire(dctx, key)
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
	eventually(t, 2*time.Second, "cancelled waiters still queued", func() bool {
		return len(s.keysMatching(t, "distlock:*:q:"+key)) == 0
	})
	mustRelease(t, held)
	s.noLeftovers(t, key)
}

// waitFIFO checks that waiters on six Lockers are served in the order
// they queued, by push.
func waitFIFO(t *testing.T, s *server) {
	t.Parallel()
	ctx := context.Background()
	key := uniqueKey(t)
	held := mustAcquire(t, s.locker(t, "h", nil), key)
	const n = 6
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range n {
		l := s.locker(t, fmt.Sprint("w", i), nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ls, err := l.Acquire(ctx, key, slowRetry)
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			mustRelease(t, ls)
		}()
		eventually(t, 5*time.Second, "waiter not queued", func() bool {
			qs := s.keysMatching(t, "distlock:*:q:"+key)
			return len(qs) == 1 && s.admin().LLen(ctx, qs[0]).Val() == int64(i+1)
		})
	}
	start := time.Now()
	mustRelease(t, held)
	wg.Wait()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("%d hand-offs took %v: not pushed", n, d)
	}
	for i, w := range order {
		if w != i {
			t.Fatalf("served in order %v, want arrival order", order)
		}
	}
	s.noLeftovers(t, key)
}

// waitCommandsPerHandoff checks that parked waiters make no requests and
// that the server commands per hand-off do not grow with the number of
// waiters.
func waitCommandsPerHandoff(t *testing.T, s *server) {
	ctx := context.Background()
	perHandoff := func(waiters int) float64 {
		key := uniqueKey(t)
		lockers := make([]*redissingle.Locker, 4)
		for i := range lockers {
			lockers[i] = s.locker(t, fmt.Sprint("c", i), nil)
			mustRelease(t, mustAcquire(t, lockers[i], uniqueKey(t))) // warm: connections, scripts, subscription
		}
		held := mustAcquire(t, lockers[0], key)
		var wg sync.WaitGroup
		for i := range waiters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ls, err := lockers[i%len(lockers)].Acquire(ctx, key, slowRetry)
				if err == nil {
					time.Sleep(2 * time.Millisecond)
					err = ls.Release(ctx)
				}
				if err != nil {
					t.Errorf("waiter: %v", err)
				}
			}()
		}
		eventually(t, 10*time.Second, "waiters not queued", func() bool {
			qs := s.keysMatching(t, "distlock:*:q:"+key)
			return len(qs) == 1 && s.admin().LLen(ctx, qs[0]).Val() == int64(waiters)
		})
		before, err := s.node.Commands(ctx)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // parked waiters make no requests
		if idle, err := s.node.Commands(ctx); err != nil || idle-before > 2 {
			t.Fatalf("%d waiters parked for 300ms made %d requests (%v)", waiters, idle-before, err)
		}
		mustRelease(t, held)
		wg.Wait()
		after, err := s.node.Commands(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return float64(after-before) / float64(waiters)
	}
	few, many := perHandoff(2), perHandoff(32)
	t.Logf("server commands per hand-off (incl. script-internal calls): 2 waiters %.1f, 32 waiters %.1f", few, many)
	// A hand-off is the releaser's script (EVALSHA, GET, LPOP, INCR,
	// PUBLISH, SET) and the woken waiter's confirmation (EVALSHA, GET,
	// PEXPIRE): 9 commands, whatever the number of waiters.
	if many > 11 || many > few+2 {
		t.Fatalf("commands per hand-off grow with waiters: %.1f at 2, %.1f at 32", few, many)
	}
}
