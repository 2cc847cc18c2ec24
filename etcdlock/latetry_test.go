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

// acquireAsyncInto runs l.Acquire(key) in the background as acquireAsync
// does, delivering to got (buffered).
func acquireAsyncInto(l *etcdlock.Locker, key string, got chan<- acquired) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ls, err := l.Acquire(ctx, key)
		got <- acquired{ls, err}
	}()
}
