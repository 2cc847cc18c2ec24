package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redlock"
)

// testFencePausedBeforeWriteBack: the nodes' fence counters differ (10 on
// node 0, 5 on the others), so the first holder's fence, 11, comes from
// node 0 alone and must be written back to the others. Its client pauses
// between reading the replies and the write-back for longer than the node
// timeout, then crashes (its Locker closes without releasing) once
// Acquire returned. The second holder cannot reach node 0: its fence comes
// from the other nodes' counters, and must still exceed the first's. Run
// at a short TTL, which the second holder waits out, and at the default
// TTL, whose end is brought forward on the nodes.
func (c *cluster) testFencePausedBeforeWriteBack(t *testing.T) {
	for _, ttl := range []time.Duration{500 * time.Millisecond, distlock.DefaultTTL} {
		t.Run(ttl.String(), func(t *testing.T) { c.fencePausedBeforeWriteBack(t, ttl) })
	}
}

func (c *cluster) fencePausedBeforeWriteBack(t *testing.T, ttl time.Duration) {
	ctx := context.Background()
	prefix := uniqueKey(t) + ":" // a fence counter of its own
	counter := prefix + "distlock:fence"
	for i, n := range c.nodes {
		v := 5
		if i == 0 {
			v = 10
		}
		if err := n.Admin().Set(ctx, counter, v, 0).Err(); err != nil {
			t.Fatalf("set node %d's counter: %v", i, err)
		}
	}
	key := uniqueKey(t)
	opts := &redlock.Options{Prefix: prefix}
	first, err := redlock.New(c.addrs("wb1"), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	pause := 80 * time.Millisecond // longer than the node timeout
	paused := 0
	restore := redlock.SetHookBeforeWriteBack(func() {
		paused++
		time.Sleep(pause)
	})
	ls1 := mustAcquire(t, first, key, distlock.WithTTL(ttl))
	restore()
	if paused == 0 {
		t.Fatal("the write-back hook never ran: this test tests nothing")
	}
	if ls1.Fence() != 11 {
		t.Fatalf("first fence %d, want 11 (node 0's counter 10, plus one)", ls1.Fence())
	}
	raised := 0
	for _, n := range c.nodes {
		if v, _ := n.Admin().Get(ctx, counter).Int64(); v >= int64(ls1.Fence()) {
			raised++
		}
	}
	t.Logf("first holder: fence %d, on %d of %d nodes when Acquire returned", ls1.Fence(), raised, len(c.nodes))
	if raised < len(c.nodes)/2+1 {
		t.Errorf("Acquire returned fence %d with only %d nodes' counters at or above it, want a majority", ls1.Fence(), raised)
	}
	if err := first.Close(); err != nil { // crashed: the key stays until its TTL ends
		t.Fatal(err)
	}
	if ttl == distlock.DefaultTTL {
		for i, n := range c.nodes {
			if err := n.Admin().PExpire(ctx, prefix+key, time.Millisecond).Err(); err != nil {
				t.Fatalf("end the TTL on node %d: %v", i, err)
			}
		}
	}
	second := c.locker(t, "wb2", opts)
	defer cutLinks(t, "wb2", c.nodes[:1])()
	ls2 := mustAcquire(t, second, key, distlock.WithTTL(ttl))
	t.Logf("second holder, without node 0: fence %d", ls2.Fence())
	if ls2.Fence() <= ls1.Fence() {
		t.Fatalf("fence went backwards: the second holder got %d after the first's %d", ls2.Fence(), ls1.Fence())
	}
	mustRelease(t, ls2)
}

// testReleaseRaisesCounter: a node that lost its fence counter (a restart
// without persistence) is raised to the lease's fence by the acquisition's
// write-back, and again by Release, which then runs the release script
// with the counter: the node counts in later majorities with a counter no
// lower than any fence handed out. Its own prefix keeps the counter apart
// from the parallel tests'.
func (c *cluster) testReleaseRaisesCounter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := c.locker(t, "rc", &redlock.Options{Prefix: "rc:", NodeTimeout: 2 * time.Second})
	const counter = "rc:distlock:fence"
	key := uniqueKey(t)
	for range 3 {
		mustRelease(t, mustAcquire(t, l, key))
	}
	lost := c.nodes[0].Admin()
	if err := lost.Del(ctx, counter).Err(); err != nil {
		t.Fatal(err)
	}
	ls := mustAcquire(t, l, key) // node 0 counts 1, the others 4
	value := func() int64 { v, _ := lost.Get(ctx, counter).Int64(); return v }
	eventually(t, 5*time.Second, "the acquisition's write-back reached node 0", func() bool {
		return value() >= int64(ls.Fence())
	})
	if err := lost.Del(ctx, counter).Err(); err != nil { // forgets again while held
		t.Fatal(err)
	}
	mustRelease(t, ls)
	if got := value(); got < int64(ls.Fence()) {
		t.Fatalf("node 0's counter is %d after Release, below the lease's fence %d", got, ls.Fence())
	}
	if h := c.holders(t, key); len(h) != 0 {
		t.Fatalf("key still on nodes %v after Release", h)
	}
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
