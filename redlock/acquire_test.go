package redlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/redlock"
)

// testAcquireReleaseContention: a lease holds its token on every node with
// a validity just under the TTL less the drift; another Locker's
// TryAcquire fails with a *QuorumError naming five held nodes (matching
// distlock.ErrNotAcquired, not ErrUnavailable); Release deletes the key
// everywhere, is idempotent and ends the lease; the next holder's fence is
// higher.
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
	locktest.ReleaseTwice(t, ls)
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

// testCancelled: a blocked Acquire whose context is cancelled returns soon
// with an error matching distlock.ErrNotAcquired and context.Canceled that
// keeps the last *QuorumError; TryAcquire on the ended context fails the
// same way.
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

// testClosed: Close wakes a blocked Acquire with distlock.ErrClosed; later
// calls return ErrClosed; a second Close returns nil.
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
