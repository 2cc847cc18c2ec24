package bench

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"

	"github.com/distlock/distlock/redlock"
)

// TestRedlockMixedRedsync: our redlock and redsync contend on the same key
// of the same 5 masters and exclude each other (both SET key token NX PX
// on a majority and compare-and-delete by token).
func TestRedlockMixedRedsync(t *testing.T) {
	c := startRedlockNodes(t, 5)
	ours := c.ours(t, c.addrs, &redlock.Options{})
	rs := c.redsync(t, c.addrs)
	const key = "mixed"
	var inside, oursN, theirsN atomic.Int32
	enter := func() {
		if inside.Add(1) != 1 {
			t.Errorf("two holders at once")
		}
		time.Sleep(2 * time.Millisecond)
		inside.Add(-1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 15 {
				ls, err := ours.Acquire(ctx, key)
				if err != nil {
					t.Errorf("ours: %v", err)
					return
				}
				enter()
				oursN.Add(1)
				if err := ls.Release(context.Background()); err != nil {
					t.Errorf("ours release: %v", err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 15 {
				m := rs.NewMutex(key, redsync.WithExpiry(10*time.Second), redsync.WithTries(math.MaxInt32),
					redsync.WithRetryDelay(5*time.Millisecond))
				if err := m.LockContext(ctx); err != nil {
					t.Errorf("redsync: %v", err)
					return
				}
				enter()
				theirsN.Add(1)
				if ok, err := m.UnlockContext(context.Background()); !ok || err != nil {
					t.Errorf("redsync unlock: %v %v", ok, err)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("ours %d, redsync %d acquisitions, never overlapping", oursN.Load(), theirsN.Load())
	for i, n := range c.nodes {
		if v := n.Admin().Exists(context.Background(), key).Val(); v != 0 {
			t.Fatalf("key left on node %d", i)
		}
	}
}
