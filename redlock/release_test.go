package redlock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redlock"
)

// testReleaseAfterExpiry: a lease whose TTL ran out is lost, and its
// Release, once another Locker holds the key, fails with
// distlock.ErrLeaseLost and leaves the new holder's token on every node.
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

// testReleaseRetried cuts three nodes' links (each connection reset, each
// new one closed at once) while a lock is held: Release cannot reach a
// majority and says so, and once the links are back its background retry
// deletes the key from those nodes long before the 10 s TTL.
func (c *cluster) testReleaseRetried(t *testing.T) {
	l := c.locker(t, "retry", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, l, key, distlock.WithTTL(10*time.Second))
	restore := cutLinks(t, "retry", c.nodes[:3])
	err := ls.Release(context.Background())
	if !errors.Is(err, distlock.ErrUnavailable) {
		t.Fatalf("Release with 3 of 5 nodes cut: %v, want ErrUnavailable", err)
	}
	if h := c.holders(t, key); len(h) != 3 {
		t.Fatalf("after the failed Release the key is on nodes %v, want the 3 cut off", h)
	}
	time.Sleep(100 * time.Millisecond)
	restore()
	start := time.Now()
	eventually(t, 3*time.Second, "the background retry deleted the key from the nodes cut off", func() bool {
		return len(c.holders(t, key)) == 0
	})
	t.Logf("key gone everywhere %v after the links came back", time.Since(start).Round(time.Millisecond))
	mustRelease(t, mustAcquire(t, l, key)) // the next acquirer is not blocked

	// A retry still pending (the links stay cut) ends with Close, which
	// waits for it (TestMain's leak check would see it otherwise).
	l2, err := redlock.New(c.addrs("retry"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ls = mustAcquire(t, l2, uniqueKey(t), distlock.WithTTL(10*time.Second))
	defer cutLinks(t, "retry", c.nodes[:3])()
	if err := ls.Release(context.Background()); !errors.Is(err, distlock.ErrUnavailable) {
		t.Fatalf("second Release with 3 of 5 nodes cut: %v, want ErrUnavailable", err)
	}
	time.Sleep(50 * time.Millisecond) // a few tries fail meanwhile
	if n := retriers(); n == 0 {
		t.Fatal("no release retrier pending before Close: this part tests nothing")
	}
	start = time.Now()
	if err := l2.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Close took %v with a release retry pending", d)
	}
	if n := retriers(); n > 0 {
		t.Fatalf("%d release retriers still running after Close returned", n)
	}
}

// testReleaseRetryBounded releases 100 locks while two nodes' links are
// cut: every release queues a retry for both, yet each node has one
// retrier goroutine at most, and once the links are back the queues drain
// and the goroutines end.
func (c *cluster) testReleaseRetryBounded(t *testing.T) {
	l := c.locker(t, "bounded", nil)
	mustRelease(t, mustAcquire(t, l, uniqueKey(t))) // connections up
	cut := c.nodes[3:]
	restore := cutLinks(t, "bounded", cut)
	most := 0
	for range 100 {
		mustRelease(t, mustAcquire(t, l, uniqueKey(t))) // 3 of 5 suffice
		most = max(most, retriers())
	}
	if most > len(cut) {
		t.Fatalf("%d release retriers at once for %d unreachable nodes, want at most one per node", most, len(cut))
	}
	if most == 0 {
		t.Fatal("no release retrier ran: the releases did not miss the nodes cut off")
	}
	restore()
	eventually(t, 5*time.Second, "the retriers drained their queues and ended", func() bool { return retriers() == 0 })
}

// testReleaseRetryAfterExtend: a lock acquired for 1 s and extended to
// 10 s, released while three nodes are cut off for 1.5 s, is still
// retried when they come back: the retry lasts as long as the longest TTL
// the key was given, not the acquisition's.
func (c *cluster) testReleaseRetryAfterExtend(t *testing.T) {
	l := c.locker(t, "extend", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, l, key, distlock.WithTTL(time.Second))
	if err := ls.Extend(context.Background(), 10*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	restore := cutLinks(t, "extend", c.nodes[:3])
	if err := ls.Release(context.Background()); !errors.Is(err, distlock.ErrUnavailable) {
		t.Fatalf("Release with 3 of 5 nodes cut: %v, want ErrUnavailable", err)
	}
	time.Sleep(1500 * time.Millisecond) // past the acquisition's TTL
	if h := c.holders(t, key); len(h) != 3 {
		t.Fatalf("1.5 s after the failed Release the key is on nodes %v, want the 3 cut off (extended to 10 s)", h)
	}
	restore()
	eventually(t, 3*time.Second, "the retry deleted the extended key from the nodes cut off", func() bool {
		return len(c.holders(t, key)) == 0
	})
}

// testReleaseRetryLate: three nodes answer too late (300 ms of latency on
// their links against the 50 ms node timeout), and their connections are
// then reset before the delayed release reaches them, so the late
// clean-up fails too: those nodes are handed to the retrier, which deletes
// the key once the links are back.
func (c *cluster) testReleaseRetryLate(t *testing.T) {
	l := c.locker(t, "late", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, l, key, distlock.WithTTL(10*time.Second))
	cut := c.nodes[:3]
	for _, n := range cut {
		n.Link("late").SetLatency(300 * time.Millisecond)
	}
	if err := ls.Release(context.Background()); !errors.Is(err, distlock.ErrUnavailable) {
		t.Fatalf("Release with 3 of 5 nodes late: %v, want ErrUnavailable", err)
	}
	restore := cutLinks(t, "late", cut) // resets the late connections, requests still held back
	time.Sleep(100 * time.Millisecond)
	if h := c.holders(t, key); len(h) != 3 {
		t.Fatalf("after the late release was cut the key is on nodes %v, want the 3 cut off", h)
	}
	restore()
	eventually(t, 3*time.Second, "the retry deleted the key from the nodes whose late clean-up failed", func() bool {
		return len(c.holders(t, key)) == 0
	})
}

// retriers counts the goroutines sending a node's pending releases.
func retriers() int {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	n := 0
	for _, block := range strings.Split(buf.String(), "\n\n") {
		if strings.Contains(block, "(*Locker).retryOn.func1") { // inlined into retryRelease or not
			var k int
			if _, err := fmt.Sscanf(block, "%d @", &k); err == nil {
				n += k
			}
		}
	}
	return n
}
