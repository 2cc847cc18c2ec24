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
	member := c.Nodes[0]
	const latency = 4 * time.Second
	slow, prompt := member.Link("slow").Addr(), member.Link("prompt").Addr()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{slow}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	a, err := etcdlock.New(cli, &etcdlock.Options{RequestTimeout: 300 * time.Millisecond, PollInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	h, b := c.locker(t, "holder", nil), c.locker(t, "b", nil)
	key := uniqueKey(t)

	// a's session exists before its link slows down (a grant is not retried).
	warm := mustAcquire(t, a, key+".warm")
	defer func() { _ = warm.Release(context.Background()) }()
	held := mustAcquire(t, h, key)

	// The first try goes out on the slow link alone; from the second on,
	// the client also has the prompt one.
	member.Link("slow").SetLatency(latency)
	defer member.Link("slow").Heal()
	var grow sync.Once
	etcdlock.SetBeforeEnqueueTry(t, func(try int) {
		if try == 2 {
			grow.Do(func() { cli.SetEndpoints(slow, prompt) })
		}
	})
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
	member.Link("slow").Heal()

	mustRelease(t, held)
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
	mustRelease(t, winner)
	// Nothing is left behind: a third client gets the key at once.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ls, err := c.locker(t, "next", nil).Acquire(ctx, key)
	if err != nil {
		t.Fatalf("the key after both waiters: %v (entries %v)", err, entries(t, admin, key))
	}
	mustRelease(t, ls)
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
	member := c.Nodes[0]
	const latency = 8 * time.Second
	slow, prompt := member.Link("slow").Addr(), member.Link("prompt").Addr()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{slow}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	a, err := etcdlock.New(cli, &etcdlock.Options{RequestTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	b := c.locker(t, "b", nil)
	key := uniqueKey(t)

	// a's session exists before its link slows down (a grant is not
	// retried), and the lock on key.warm keeps it in use throughout.
	warm := mustAcquire(t, a, key+".warm")
	defer func() { _ = warm.Release(context.Background()) }()

	// The first try goes out on the slow link; from the second on, the
	// client uses the prompt one alone.
	member.Link("slow").SetLatency(latency)
	defer member.Link("slow").Heal()
	var switchLink sync.Once
	etcdlock.SetBeforeEnqueueTry(t, func(try int) {
		if try == 2 {
			switchLink.Do(func() { cli.SetEndpoints(prompt) })
		}
	})
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
	member.Link("slow").Heal()

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
