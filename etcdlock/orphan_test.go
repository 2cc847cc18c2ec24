package etcdlock_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/distlock/distlock/etcdlock"
)

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
