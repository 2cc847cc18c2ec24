package redlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redlock"
)

// queueLen returns the length of key's wait queue (Prefix "") on every
// node.
func (c *cluster) queueLen(t *testing.T, key string) []int64 {
	t.Helper()
	out := make([]int64, len(c.nodes))
	for i, n := range c.nodes {
		v, err := n.Admin().ZCard(context.Background(), "distlock:q:"+key).Result()
		if err != nil {
			t.Fatalf("ZCARD on node %d: %v", i, err)
		}
		out[i] = v
	}
	return out
}

// queuedEverywhere reports whether key's wait queue holds n entries on
// every node.
func (c *cluster) queuedEverywhere(t *testing.T, key string, n int64) func() bool {
	return func() bool {
		for _, v := range c.queueLen(t, key) {
			if v != n {
				return false
			}
		}
		return true
	}
}

// testCancelledWaiterLeaves: a waiter whose every reply is lost (its
// links drop what the nodes send back) queues on the nodes without
// knowing it, and its context ends. It must leave the queues all the
// same: a stale entry there would absorb a release's wake-up. (Its leaving
// is held back until the entries have been seen, so that the test knows
// the waiter queued.)
func (c *cluster) testCancelledWaiterLeaves(t *testing.T) {
	holder := c.locker(t, "qh", nil)
	key := uniqueKey(t)
	held := mustAcquire(t, holder, key)
	defer mustRelease(t, held)
	waiter := c.locker(t, "qlost", nil)
	for _, n := range c.nodes {
		n.Link("qlost").DropReplies()
	}
	hold := make(chan struct{})
	var once sync.Once
	unhold := func() { once.Do(func() { close(hold) }) }
	defer unhold()
	defer redlock.SetHookBeforeLeave(func() { <-hold })()
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	_, err := waiter.Acquire(ctx, key)
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
	for _, n := range c.nodes {
		n.Link("qlost").Heal()
	}
	queued := c.queueLen(t, key)
	t.Logf("queue lengths when Acquire returned: %v", queued)
	if !c.queuedEverywhere(t, key, 1)() {
		t.Fatal("the waiter did not queue on every node: this test tests nothing")
	}
	unhold()
	eventually(t, 3*time.Second, "the cancelled waiter left every queue", c.queuedEverywhere(t, key, 0))
}

// testWakeSkipsGoneWaiter: waiter D queues first, waiter E second (each
// in its own Locker; E polls only every 10 s, and the holder's TTL is
// 30 s). D's context ends, and its leaving of the queues is held back (a
// test hook), as when a release runs just before it lands: the release
// pops D's entry first and tells D's Locker, which is still subscribed.
// That wake-up must reach E: E must be woken by a push (a wake-up message
// for a waiter still waiting, counted by a hook) and hold the key long
// before its poll.
func (c *cluster) testWakeSkipsGoneWaiter(t *testing.T) {
	holder := c.locker(t, "qh", nil)
	gone := c.locker(t, "qgone", nil)
	live := c.locker(t, "qlive", &redlock.Options{PollInterval: 10 * time.Second})
	key := uniqueKey(t)
	held := mustAcquire(t, holder, key)

	dctx, dcancel := context.WithCancel(context.Background())
	defer dcancel()
	derr := make(chan error, 1)
	go func() {
		_, err := gone.Acquire(dctx, key)
		derr <- err
	}()
	eventually(t, 5*time.Second, "D queued on every node", c.queuedEverywhere(t, key, 1))

	type result struct {
		ls  distlock.Lease
		err error
	}
	got := make(chan result, 1)
	ectx, ecancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ecancel()
	go func() {
		ls, err := live.Acquire(ectx, key)
		got <- result{ls, err}
	}()
	eventually(t, 5*time.Second, "E queued behind D on every node", c.queuedEverywhere(t, key, 2))

	held2 := make(chan struct{})
	var leaves atomic.Int32
	var once sync.Once
	unhold := func() { once.Do(func() { close(held2) }) }
	defer unhold()
	defer redlock.SetHookBeforeLeave(func() {
		leaves.Add(1)
		<-held2
	})()
	dcancel()
	if err := <-derr; err == nil {
		t.Fatal("D's Acquire succeeded")
	}
	eventually(t, 5*time.Second, "D's leaving started", func() bool { return leaves.Load() > 0 })

	var toE, toGone atomic.Int32
	defer redlock.SetHookMessage(func(l *redlock.Locker, isLive bool) {
		switch {
		case l == live && isLive:
			toE.Add(1)
		case l == gone && !isLive:
			toGone.Add(1)
		}
	})()
	released := time.Now()
	mustRelease(t, held)
	var r result
	select {
	case r = <-got:
	case <-time.After(5 * time.Second):
		t.Fatalf("E not handed the key 5 s after the release (wake-ups for the gone waiter D: %d, for E: %d)", toGone.Load(), toE.Load())
	}
	if r.err != nil {
		t.Fatalf("E's Acquire: %v", r.err)
	}
	defer mustRelease(t, r.ls)
	t.Logf("E held the key %v after the release; wake-ups for the gone waiter D: %d, for E: %d",
		time.Since(released).Round(time.Millisecond), toGone.Load(), toE.Load())
	if toGone.Load() == 0 {
		t.Fatal("the release did not pop D's entry first: this test tests nothing")
	}
	if toE.Load() == 0 {
		t.Fatal("E got the key without a push wake-up")
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
