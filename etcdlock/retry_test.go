package etcdlock_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
	"github.com/distlock/distlock/testbed"
)

// TestEnqueueLateTry: a waiter's enqueue is retried because its first try
// times out on a slow link, and a later try, on a prompt link, queues its
// entry. An operator deletes that entry while the waiter waits, and the
// first try, still in flight, then reaches the server and creates the
// entry again, behind a second waiter queued meanwhile. When the holder
// releases, the second waiter holds the lock; the first must not take the
// re-created entry for the one it queued (it would hold the lock too), and
// must leave nothing that blocks the key.
func TestEnqueueLateTry(t *testing.T) {
	c := startMember(t)
	admin := c.admin(t)
	const latency = 4 * time.Second
	key := uniqueKey(t)
	h, b := c.locker(t, "holder", nil), c.locker(t, "b", nil)
	held := mustAcquire(t, h, key)
	// Tries after the first also have the prompt link.
	a, slow := c.slowFirstTry(t, key, latency, &etcdlock.Options{RequestTimeout: 300 * time.Millisecond, PollInterval: time.Minute}, true)
	// Once a waits, the operator deletes its entry, and b queues.
	var once sync.Once
	queued := make(chan string, 1)
	bgot := make(chan acquired, 1)
	etcdlock.SetBeforeWatch(func(string) {
		once.Do(func() {
			defer close(queued)
			es := entries(t, admin, key)
			if len(es) != 2 {
				t.Errorf("entries when a waits: %v, want the holder's and a's", es)
				return
			}
			if _, err := admin.Delete(context.Background(), es[1]); err != nil {
				t.Errorf("delete a's entry: %v", err)
				return
			}
			queued <- es[1]
			acquireAsyncInto(b, key, bgot)
			waitEntries(t, admin, key, 2)
		})
	})
	defer etcdlock.SetBeforeWatch(nil)
	agot := acquireAsync(a, key)
	mine := <-queued
	if mine == "" {
		t.FailNow()
	}

	// The first try lands: a's entry is back, behind b's.
	eventually(t, 2*latency, "a's first try re-created its entry", func() bool {
		return slices.Contains(entries(t, admin, key), mine)
	})
	if es := entries(t, admin, key); !slices.Equal(es[2:], []string{mine}) {
		t.Fatalf("entries %v: want a's re-created entry %s last", es, mine)
	}
	slow.Heal()

	mustRelease(t, held)
	winner := oneHolder(t, key, agot, bgot)
	mustRelease(t, winner)
	c.wantFree(t, key) // nothing is left behind
}

// TestLateTryAfterRelease: an acquisition's first enqueue try times out on
// a slow link, a later try on a prompt link queues its entry, and the lock
// is granted and released at once. The first try then reaches the server
// and re-creates the entry on the session's lease, which lives on because
// the Locker holds another lock on it. The session must delete that entry
// within a few renewal intervals, so that another client gets the key.
func TestLateTryAfterRelease(t *testing.T) {
	c := startMember(t)
	admin := c.admin(t)
	const latency = 8 * time.Second
	b := c.locker(t, "b", nil)
	key := uniqueKey(t)
	// Tries after the first use the prompt link alone; the lock on
	// key.warm keeps a's session in use throughout.
	a, slow := c.slowFirstTry(t, key, latency, &etcdlock.Options{RequestTimeout: 300 * time.Millisecond}, false)
	sent := time.Now()
	ls := mustAcquire(t, a, key)
	mine := etcdlock.HeldDriver(a, ls).Entry()
	mustRelease(t, ls)
	if es := entries(t, admin, key); len(es) != 0 {
		t.Fatalf("entries after the release: %v, want none", es)
	}

	// The first try lands and re-creates the entry.
	eventually(t, 2*latency, "the first enqueue try re-created the entry", func() bool {
		return slices.Contains(entries(t, admin, key), mine)
	})
	t.Logf("entry %s re-created %v after the first try was sent", mine, time.Since(sent).Round(10*time.Millisecond))
	slow.Heal()

	// The session deletes it within a few renewal intervals (TTL/10 each,
	// the default TTL here).
	bound := 4 * (30 * time.Second / 10)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	got, err := b.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("b.Acquire within %v of the late try: %v (entries %v)", bound, err, entries(t, admin, key))
	}
	mustRelease(t, got)
}

// slowFirstTry returns a Locker (opts) on the single member whose first
// enqueue try of every acquisition goes out on the link "slow", delayed by
// latency, and whose later tries go out on the link "prompt" too (both) or
// alone (!both), with the hook that switches them; the link is healed when
// t ends. The Locker holds key+".warm", taken before the link slows down,
// so its session exists (a grant is not retried) and stays in use.
func (c *cluster) slowFirstTry(t *testing.T, key string, latency time.Duration, opts *etcdlock.Options, both bool) (*etcdlock.Locker, *testbed.Proxy) {
	t.Helper()
	member := c.Nodes[0]
	slow, prompt := member.Link("slow"), member.Link("prompt")
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{slow.Addr()}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	a, err := etcdlock.New(cli, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	warm := mustAcquire(t, a, key+".warm")
	t.Cleanup(func() { _ = warm.Release(context.Background()) })
	slow.SetLatency(latency)
	t.Cleanup(slow.Heal)
	later := []string{prompt.Addr()}
	if both {
		later = []string{slow.Addr(), prompt.Addr()}
	}
	var switched sync.Once
	etcdlock.SetBeforeEnqueueTry(t, func(try int) {
		if try == 2 {
			switched.Do(func() { cli.SetEndpoints(later...) })
		}
	})
	return a, slow
}

// oneHolder waits for the Acquire of a (agot) and of b (bgot) to return
// after the holder released, and returns the one lease granted: b, next in
// the queue, must get the lock; a may too only if b did not (a second
// holder fails the test), else it fails with distlock.ErrUnavailable.
func oneHolder(t *testing.T, key string, agot, bgot <-chan acquired) distlock.Lease {
	t.Helper()
	var winner distlock.Lease
	for range 2 {
		select {
		case r := <-agot:
			if r.err == nil {
				if winner != nil {
					t.Fatalf("a and b both hold %s (fences %d and %d): a took its re-created entry for its own", key, r.ls.Fence(), winner.Fence())
				}
				winner = r.ls
			} else {
				wantErr(t, r.err, distlock.ErrUnavailable)
				t.Logf("a: %v", r.err)
			}
			agot = nil
		case r := <-bgot:
			if r.err != nil {
				t.Fatalf("b, next in the queue after the holder: %v", r.err)
			}
			if winner != nil {
				t.Fatalf("a and b both hold %s (fences %d and %d): a took its re-created entry for its own", key, r.ls.Fence(), winner.Fence())
			}
			winner = r.ls
			bgot = nil
		case <-time.After(10 * time.Second):
			t.Fatalf("a and b did not both return within 10 s of the release (winner so far: %v)", winner != nil)
		}
	}
	return winner
}

// wantFree checks that a new client gets key within 2 s (no entry was
// left behind).
func (c *cluster) wantFree(t *testing.T, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ls, err := c.locker(t, "next", nil).Acquire(ctx, key)
	if err != nil {
		t.Fatalf("the key after both waiters: %v (entries %v)", err, entries(t, c.admin(t), key))
	}
	mustRelease(t, ls)
}
