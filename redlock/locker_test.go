package redlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redlock"
)

// TestRedlock runs every scenario on one set of 5 masters: first the
// healthy ones in parallel, then the faults one at a time.
func TestRedlock(t *testing.T) {
	c := startCluster(t, 5)
	t.Run("Healthy", func(t *testing.T) {
		t.Run("AcquireReleaseContention", c.testAcquireReleaseContention)
		t.Run("FenceIncreasing", c.testFenceIncreasing)
		t.Run("ReleaseRaisesCounter", c.testReleaseRaisesCounter)
		t.Run("Exclusion", c.testExclusion)
		t.Run("PushWakeup", c.testPushWakeup)
		t.Run("SplitContention", c.testSplitContention)
		t.Run("ReleaseAfterExpiry", c.testReleaseAfterExpiry)
		t.Run("ExtendAfterExpiry", c.testExtendAfterExpiry)
		t.Run("Watchdog", c.testWatchdog)
		t.Run("Cancelled", c.testCancelled)
		t.Run("Closed", c.testClosed)
		t.Run("LocalTurns", c.testLocalTurns)
		t.Run("HostileKeys", c.testHostileKeys)
	})
	t.Run("Faults", func(t *testing.T) {
		t.Run("FencePausedBeforeWriteBack", c.testFencePausedBeforeWriteBack)
		t.Run("CancelledWaiterLeaves", c.testCancelledWaiterLeaves)
		t.Run("WakeSkipsGoneWaiter", c.testWakeSkipsGoneWaiter)
		t.Run("ReleaseRetried", c.testReleaseRetried)
		t.Run("ReleaseRetryBounded", c.testReleaseRetryBounded)
		t.Run("ReleaseRetryAfterExtend", c.testReleaseRetryAfterExtend)
		t.Run("ReleaseRetryLate", c.testReleaseRetryLate)
		t.Run("TwoKilled", c.testTwoKilled)
		t.Run("ThreeKilled", c.testThreeKilled)
		t.Run("Paused", c.testPaused)
		t.Run("LatencyOnMajority", c.testLatencyOnMajority)
		t.Run("LatencyFreshConnections", c.testLatencyFreshConnections)
	})
}

func (c *cluster) testAcquireReleaseContention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A generous node timeout: this test checks what each node holds, and
	// on a loaded CI host a node can miss the 50 ms default while Acquire
	// still succeeds on the other four (a correct outcome, not this test's).
	relaxed := &redlock.Options{NodeTimeout: 2 * time.Second}
	a, b := c.locker(t, "a", relaxed), c.locker(t, "b", relaxed)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key)
	if ls.Key() != key || len(ls.Token()) < 32 || ls.Fence() == 0 {
		t.Fatalf("lease key %q token %q fence %d", ls.Key(), ls.Token(), ls.Fence())
	}
	for i, v := range c.values(t, key) {
		if v != ls.Token() {
			t.Fatalf("node %d holds %q, want the token %q", i, v, ls.Token())
		}
	}
	// 30 s default TTL, drift 30 ms x 0.01 + 2 ms = 302 ms.
	if left := time.Until(ls.ValidUntil()); left <= 29*time.Second || left > 30*time.Second-300*time.Millisecond {
		t.Fatalf("validity %v, want just under 30s - 302ms", left)
	}
	_, err := b.TryAcquire(ctx, key)
	wantErr(t, err, distlock.ErrNotAcquired)
	notErr(t, err, distlock.ErrUnavailable)
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || len(qe.Nodes) != 5 || qe.Acquired != 0 || qe.Needed != 3 {
		t.Fatalf("error %#v, want a *QuorumError naming 5 held nodes", err)
	}
	for _, n := range qe.Nodes {
		wantErr(t, n.Err, redlock.ErrHeld)
	}
	t.Logf("contention: %v", err)
	mustRelease(t, ls)
	wantErr(t, ls.Err(), distlock.ErrReleased)
	select {
	case <-ls.Done():
	default:
		t.Fatal("Done not closed after Release")
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if h := c.holders(t, key); len(h) > 0 {
		t.Fatalf("key left on nodes %v after release", h)
	}
	ls2, err := b.TryAcquire(ctx, key)
	if err != nil {
		t.Fatalf("TryAcquire after release: %v", err)
	}
	if ls2.Fence() <= ls.Fence() {
		t.Fatalf("fence %d after %d", ls2.Fence(), ls.Fence())
	}
	mustRelease(t, ls2)
}

// testFenceIncreasing alternates three Lockers on a few keys, with and
// without release (expiry), and checks each key's fences increase.
func (c *cluster) testFenceIncreasing(t *testing.T) {
	t.Parallel()
	lockers := []*redlock.Locker{c.locker(t, "a", nil), c.locker(t, "b", nil), c.locker(t, "c", nil)}
	keys := []string{uniqueKey(t), uniqueKey(t), uniqueKey(t)}
	last := map[string]uint64{}
	for round := range 8 {
		for i, key := range keys {
			ttl := 30 * time.Second
			if round%4 == 3 {
				ttl = 50 * time.Millisecond // let it expire instead of releasing
			}
			ls := mustAcquire(t, lockers[(i+round)%3], key, distlock.WithTTL(ttl))
			if ls.Fence() <= last[key] {
				t.Fatalf("key %s round %d: fence %d after %d", key, round, ls.Fence(), last[key])
			}
			last[key] = ls.Fence()
			if ttl == 30*time.Second {
				mustRelease(t, ls)
			} else {
				<-ls.Done()
			}
		}
	}
}

// testExclusion: 4 Lockers x 2 goroutines take one key 40 times in all;
// no two inside at once, fences increase in acquisition order.
func (c *cluster) testExclusion(t *testing.T) {
	t.Parallel()
	key := uniqueKey(t)
	var (
		inside atomic.Int32
		mu     sync.Mutex
		last   uint64
		wg     sync.WaitGroup
	)
	for i := range 4 {
		l := c.locker(t, string(rune('a'+i)), nil)
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					ls, err := l.Acquire(context.Background(), key)
					if err != nil {
						t.Errorf("Acquire: %v", err)
						return
					}
					if inside.Add(1) != 1 {
						t.Errorf("two holders at once")
					}
					mu.Lock()
					if ls.Fence() <= last {
						t.Errorf("fence %d after %d", ls.Fence(), last)
					}
					last = ls.Fence()
					mu.Unlock()
					time.Sleep(time.Millisecond)
					inside.Add(-1)
					if err := ls.Release(context.Background()); err != nil {
						t.Errorf("Release: %v", err)
					}
				}
			}()
		}
	}
	wg.Wait()
	if h := c.holders(t, key); len(h) > 0 {
		t.Fatalf("key left on nodes %v", h)
	}
}

// testPushWakeup: a blocked Acquire is woken by the release, long before
// the poll interval or the holder's TTL.
func (c *cluster) testPushWakeup(t *testing.T) {
	t.Parallel()
	a := c.locker(t, "a", &redlock.Options{PollInterval: 10 * time.Second})
	b := c.locker(t, "b", &redlock.Options{PollInterval: 10 * time.Second})
	key := uniqueKey(t)
	for range 3 {
		ls := mustAcquire(t, a, key)
		got := make(chan distlock.Lease, 1)
		go func() {
			ls, err := b.Acquire(context.Background(), key)
			if err != nil {
				t.Errorf("Acquire: %v", err)
			}
			got <- ls
		}()
		time.Sleep(200 * time.Millisecond) // b queued and subscribed
		released := time.Now()
		mustRelease(t, ls)
		ls2 := <-got
		if ls2 == nil {
			return
		}
		d := time.Since(released)
		t.Logf("hand-off %v", d)
		if d > 150*time.Millisecond {
			t.Fatalf("hand-off took %v: no push wake-up", d)
		}
		mustRelease(t, ls2)
	}
}

// testSplitContention: 5 Lockers race TryAcquire on one key many times;
// at most one wins each round, and once every round is over no node holds
// the key (losers of a split vote unlock what they took).
func (c *cluster) testSplitContention(t *testing.T) {
	t.Parallel()
	var lockers []*redlock.Locker
	for i := range 5 {
		lockers = append(lockers, c.locker(t, string(rune('a'+i)), nil))
	}
	splits := 0
	for range 30 {
		key := uniqueKey(t)
		var wg sync.WaitGroup
		var inside atomic.Int32
		errs := make([]error, len(lockers))
		for i, l := range lockers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ls, err := l.TryAcquire(context.Background(), key)
				errs[i] = err
				if err == nil {
					if inside.Add(1) > 1 {
						t.Errorf("two holders at once")
					}
					time.Sleep(time.Millisecond)
					inside.Add(-1)
					mustRelease(t, ls)
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			var qe *redlock.QuorumError
			if errors.As(err, &qe) && qe.Acquired > 0 {
				splits++
			}
		}
		if h := c.holders(t, key); len(h) > 0 {
			t.Fatalf("partial keys left on nodes %v (errors %v)", h, errs)
		}
	}
	t.Logf("%d losers had taken some nodes", splits)
}

func (c *cluster) testReleaseAfterExpiry(t *testing.T) {
	t.Parallel()
	a, b := c.locker(t, "a", nil), c.locker(t, "b", nil)
	key := uniqueKey(t)
	old := mustAcquire(t, a, key, distlock.WithTTL(200*time.Millisecond))
	<-old.Done()
	wantErr(t, old.Err(), distlock.ErrLeaseLost)
	eventually(t, time.Second, "key expired", func() bool { return len(c.holders(t, key)) == 0 })
	ls := mustAcquire(t, b, key)
	err := old.Release(context.Background())
	wantErr(t, err, distlock.ErrLeaseLost)
	for i, v := range c.values(t, key) {
		if v != ls.Token() {
			t.Fatalf("node %d holds %q after the stale release, want the new owner's %q", i, v, ls.Token())
		}
	}
	mustRelease(t, ls)
}

func (c *cluster) testExtendAfterExpiry(t *testing.T) {
	t.Parallel()
	a := c.locker(t, "a", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key, distlock.WithTTL(time.Second))
	before := ls.ValidUntil()
	time.Sleep(50 * time.Millisecond)
	if err := ls.Extend(context.Background(), 2*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if !ls.ValidUntil().After(before.Add(900 * time.Millisecond)) {
		t.Fatalf("ValidUntil %v after extension, was %v", ls.ValidUntil(), before)
	}
	mustRelease(t, ls)

	ls = mustAcquire(t, a, key, distlock.WithTTL(150*time.Millisecond))
	time.Sleep(250 * time.Millisecond)
	err := ls.Extend(context.Background(), time.Second)
	wantErr(t, err, distlock.ErrLeaseLost)
	if h := c.holders(t, key); len(h) > 0 {
		t.Fatalf("extend after expiry re-created the key on nodes %v", h)
	}
	// The driver itself, on a key gone while the local deadline had not
	// passed: also lost, also not re-created.
	ls = mustAcquire(t, a, key, distlock.WithTTL(10*time.Second))
	for _, n := range c.nodes {
		n.Admin().Del(context.Background(), key)
	}
	err = ls.Extend(context.Background(), time.Second)
	wantErr(t, err, distlock.ErrLeaseLost)
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || len(qe.Nodes) != 5 {
		t.Fatalf("error %v, want a *QuorumError naming 5 nodes", err)
	}
	wantErr(t, ls.Err(), distlock.ErrLeaseLost)
	if h := c.holders(t, key); len(h) > 0 {
		t.Fatalf("extend re-created the key on nodes %v", h)
	}
}

func (c *cluster) testWatchdog(t *testing.T) {
	t.Parallel()
	a, b := c.locker(t, "a", nil), c.locker(t, "b", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key, distlock.WithTTL(time.Second), distlock.WithAutoExtend(0))
	time.Sleep(3 * time.Second)
	if err := ls.Err(); err != nil {
		t.Fatalf("lease lost under the watchdog: %v", err)
	}
	_, err := b.TryAcquire(context.Background(), key)
	wantErr(t, err, distlock.ErrNotAcquired)
	mustRelease(t, ls)
}

func (c *cluster) testCancelled(t *testing.T) {
	t.Parallel()
	a, b := c.locker(t, "a", nil), c.locker(t, "b", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(150*time.Millisecond, cancel)
	start := time.Now()
	_, err := b.Acquire(ctx, key)
	wantErr(t, err, distlock.ErrNotAcquired, context.Canceled)
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		t.Fatalf("error %v keeps no *QuorumError", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("cancelled Acquire returned after %v", d)
	}
	_, err = b.TryAcquire(ctx, key)
	wantErr(t, err, distlock.ErrNotAcquired, context.Canceled)
	mustRelease(t, ls)
}

func (c *cluster) testClosed(t *testing.T) {
	t.Parallel()
	a := c.locker(t, "a", nil)
	b, err := redlock.New(c.addrs("b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key)
	errc := make(chan error, 1)
	go func() {
		_, err := b.Acquire(context.Background(), key)
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		wantErr(t, err, distlock.ErrClosed)
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not wake a blocked Acquire")
	}
	_, err = b.TryAcquire(context.Background(), key)
	wantErr(t, err, distlock.ErrClosed)
	_, err = b.Acquire(context.Background(), key)
	wantErr(t, err, distlock.ErrClosed)
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	mustRelease(t, ls)
}
