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

// TestWait covers blocking Acquire: push hand-off across Lockers, the
// expiry fallback, cancellation, lost notifications and clean-up.
func TestWait(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()

	t.Run("HandoffIsPushed", func(t *testing.T) {
		t.Parallel()
		a, b := s.locker(t, "a", nil), s.locker(t, "b", nil)
		key := uniqueKey(t)
		for range 5 {
			held := mustAcquire(t, a, key)
			got := make(chan distlock.Lease, 1)
			go func() {
				ls, err := b.Acquire(ctx, key, slowRetry)
				if err != nil {
					t.Errorf("Acquire: %v", err)
				}
				got <- ls
			}()
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
		if left := s.leftovers(t, key); len(left) > 0 {
			t.Fatalf("keys left: %v", left)
		}
	})

	t.Run("ExpiryFallback", func(t *testing.T) {
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
		if left := s.leftovers(t, key); len(left) > 0 {
			t.Fatalf("keys left: %v", left)
		}
	})

	t.Run("CancelMatchesNotAcquiredAndCtx", func(t *testing.T) {
		t.Parallel()
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
		if left := s.leftovers(t, key); len(left) > 0 {
			t.Fatalf("keys left: %v", left)
		}
	})

	t.Run("FIFOAcrossLockers", func(t *testing.T) {
		t.Parallel()
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
		if left := s.leftovers(t, key); len(left) > 0 {
			t.Fatalf("keys left: %v", left)
		}
	})

	t.Run("TryAcquiredKeyHandedOnToQueue", func(t *testing.T) {
		t.Parallel()
		// Push alone can wake the waiter within the test: its poll interval
		// is a minute, and the holder it queued behind had the default TTL.
		a, c := s.locker(t, "a", nil), s.locker(t, "c", nil)
		w := s.locker(t, "w", &redissingle.Options{PollInterval: time.Minute})
		key := uniqueKey(t)
		held := mustAcquire(t, a, key)
		got := make(chan distlock.Lease, 1)
		go func() {
			ls, err := w.Acquire(ctx, key, slowRetry)
			if err != nil {
				t.Errorf("Acquire: %v", err)
			}
			got <- ls
		}()
		eventually(t, 5*time.Second, "waiter never queued", func() bool {
			return len(s.keysMatching(t, "distlock:*:q:"+key)) == 1
		})
		// The holder shortens its TTL and expires without a release: the
		// queue stays, the waiter sleeps on, and a TryAcquire takes the key.
		if err := held.Extend(ctx, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Second, "holder never expired", func() bool { return s.admin().Exists(ctx, key).Val() == 0 })
		between, err := c.TryAcquire(ctx, key)
		if err != nil {
			t.Fatalf("TryAcquire of the expired key: %v", err)
		}
		start := time.Now()
		mustRelease(t, between)
		value := s.admin().Get(ctx, key).Val() // the release's hand-off: "token:fence"
		var ls distlock.Lease
		select {
		case ls = <-got:
		case <-time.After(5 * time.Second):
			t.Fatalf("waiter not woken %v after the release of a TryAcquired key; a queue was waiting", time.Since(start))
		}
		if ls == nil {
			return
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("hand-off took %v", d)
		}
		if ls.Fence() <= between.Fence() {
			t.Fatalf("fence %d after %d", ls.Fence(), between.Fence())
		}
		if want := fmt.Sprint(ls.Token(), ":", ls.Fence()); value != want {
			t.Fatalf("value after the release %q, want %q: the release did not hand the key over", value, want)
		}
		mustRelease(t, ls)
		if left := s.leftovers(t, key); len(left) > 0 {
			t.Fatalf("keys left: %v", left)
		}
	})

	t.Run("DeadWaiterSkipped", func(t *testing.T) {
		t.Parallel()
		a, b := s.locker(t, "a", nil), s.locker(t, "b", nil)
		key := uniqueKey(t)
		held := mustAcquire(t, a, key)
		got := make(chan error, 1)
		go func() {
			ls, err := b.Acquire(ctx, key, slowRetry)
			if err == nil {
				err = ls.Release(ctx)
			}
			got <- err
		}()
		var q string
		eventually(t, 5*time.Second, "waiter not queued", func() bool {
			qs := s.keysMatching(t, "distlock:*:q:"+key)
			if len(qs) == 1 {
				q = qs[0]
			}
			return q != ""
		})
		// A waiter whose process died: its Locker's channel has no subscriber.
		dead := "distlock:w:dead|1|00112233445566778899aabbccddeeff|30000"
		if err := s.admin().LPush(ctx, q, dead).Err(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		mustRelease(t, held)
		if err := <-got; err != nil {
			t.Fatalf("live waiter: %v", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("live waiter served after %v", d)
		}
		if left := s.leftovers(t, key); len(left) > 0 {
			t.Fatalf("keys left: %v", left)
		}
	})

	t.Run("LostNotificationRecovered", func(t *testing.T) {
		t.Parallel()
		a := s.locker(t, "a", nil)
		b := s.locker(t, "lost-b", &redissingle.Options{Lock: distlock.Options{RetryMin: 20 * time.Millisecond, RetryMax: 40 * time.Millisecond}})
		key := uniqueKey(t)
		held := mustAcquire(t, a, key)
		got := make(chan error, 1)
		go func() {
			ls, err := b.Acquire(ctx, key)
			if err == nil {
				err = ls.Release(ctx)
			}
			got <- err
		}()
		eventually(t, 5*time.Second, "waiter not queued", func() bool {
			return len(s.keysMatching(t, "distlock:*:q:"+key)) == 1
		})
		// Cut b's connections (its subscription among them) while the
		// release hands over: the notification is lost; b must notice.
		link := s.node.Link("lost-b")
		link.Blackhole()
		mustRelease(t, held)
		time.Sleep(100 * time.Millisecond)
		link.Heal()
		link.Reset()
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("waiter: %v", err)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("waiter never took the key handed over while its notification was lost")
		}
		if left := s.leftovers(t, key); len(left) > 0 {
			t.Fatalf("keys left: %v", left)
		}
	})

	t.Run("CommandsPerHandoffIndependentOfWaiters", func(t *testing.T) {
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
	})
}
