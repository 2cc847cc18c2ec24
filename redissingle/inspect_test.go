package redissingle_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/redissingle"
)

// TestInspect runs the Inspector contract and the scenarios of this
// backend on one Redis.
func TestInspect(t *testing.T) {
	s := startRedis(t)
	t.Run("Contract", func(t *testing.T) {
		a, b, closed := s.locker(t, "a", nil), s.locker(t, "b", nil), s.locker(t, "closed", nil)
		// The fence is in the lock's value only after a hand-off, labels
		// are not stored, and a lease that is not extended learns of
		// nothing before its deadline.
		locktest.Inspector(t, a, b, closed, locktest.InspectTraits{
			HolderIsTokenID: true,
			TTLBased:        true,
			Queues:          true,
			MonotonicFence:  true,
		})
	})
	t.Run("Fence", func(t *testing.T) { inspectFence(t, s) })
	t.Run("Leak", func(t *testing.T) { inspectLeak(t, s) })
	t.Run("QueueLeak", func(t *testing.T) { inspectQueueLeak(t, s) })
	t.Run("ListPages", func(t *testing.T) { listPages(t, s) })
	t.Run("ForceReleaseWakes", func(t *testing.T) { forceReleaseWakes(t, s) })
	t.Run("Silent", func(t *testing.T) { inspectSilent(t, s) })
}

func ctx5(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// inspectFence: a holder that took a free key has its fence only in its
// lease (Fence 0); one handed the key by a release has it in the value.
func inspectFence(t *testing.T, s *server) {
	a, b := s.locker(t, "fence-a", nil), s.locker(t, "fence-b", nil)
	key := uniqueKey(t)
	first := mustAcquire(t, a, key, distlock.WithTTL(10*time.Second))
	if info := locktest.MustInspect(t, b, key); info.Fence != 0 || info.Holder != distlock.HolderID(first.Token()) {
		t.Fatalf("a holder that took a free key reported %+v", info)
	}
	handed := acquireAsync(t, ctx5(t), b, key, distlock.WithTTL(10*time.Second))
	eventually(t, 5*time.Second, "the blocked Acquire is not queued", func() bool {
		return locktest.MustInspect(t, a, key).Waiters == 1
	})
	mustRelease(t, first)
	next := <-handed
	if next == nil {
		return
	}
	defer mustRelease(t, next)
	if info := locktest.MustInspect(t, a, key); info.Fence != next.Fence() || info.Fence <= first.Fence() || info.Waiters != 0 {
		t.Fatalf("a handed-off holder with fence %d reported %+v", next.Fence(), info)
	}
}

// inspectLeak: lock keys set by hand without expiry, or of another type,
// are leaks that Inspect and List report and ForceRelease clears.
func inspectLeak(t *testing.T, s *server) {
	l := s.locker(t, "leak", &redissingle.Options{Prefix: "leak/"})
	dir := uniqueKey(t) + "/"
	plain, hash, fine := dir+"plain", dir+"hash", dir+"fine"
	admin := s.admin()
	if err := admin.Set(ctx5(t), "leak/"+plain, "by-hand", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.HSet(ctx5(t), "leak/"+hash, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	held := mustAcquire(t, l, fine, distlock.WithTTL(10*time.Second))
	defer mustRelease(t, held)

	info := locktest.MustInspect(t, l, plain)
	if !info.Held || info.TTL != distlock.NoExpiry || !strings.Contains(info.Leak, "no expiry") || info.Holder != distlock.HolderID("by-hand") {
		t.Fatalf("a lock key without expiry reported %+v", info)
	}
	info = locktest.MustInspect(t, l, hash)
	if !info.Held || info.Holder != "" || !strings.Contains(info.Leak, "hash") {
		t.Fatalf("a lock key holding a hash reported %+v", info)
	}
	list, err := distlock.List(ctx5(t), l, dir, distlock.Page{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, i := range list.Locks {
		got = append(got, fmt.Sprintf("%s leak=%t", i.Key, i.Leak != ""))
	}
	// The hash is not a string: Inspect reports it, List's scan does not.
	if want := []string{fine + " leak=false", plain + " leak=true"}; !slices.Equal(got, want) || list.Next != "" {
		t.Fatalf("List = %v (next %q), want %v", got, list.Next, want)
	}
	for _, key := range []string{plain, hash} {
		if held, err := distlock.ForceRelease(ctx5(t), l, key); err != nil || !held {
			t.Fatalf("ForceRelease(%s) = %v, %v", key, held, err)
		}
		if info := locktest.MustInspect(t, l, key); info.Held || info.Leak != "" || info.TTL != 0 {
			t.Fatalf("after ForceRelease %s reported %+v", key, info)
		}
		mustRelease(t, mustAcquire(t, l, key))
	}
}

// inspectQueueLeak: a wait queue left without expiry is a leak;
// ForceRelease hands the key to the first waiter and gives the queue,
// where the second still waits, back its expiry.
func inspectQueueLeak(t *testing.T, s *server) {
	a, b := s.locker(t, "qleak-a", nil), s.locker(t, "qleak-b", nil)
	key := uniqueKey(t)
	old := mustAcquire(t, a, key, distlock.WithTTL(10*time.Second))
	waiters := []<-chan distlock.Lease{acquireAsync(t, ctx5(t), b, key, distlock.WithTTL(10*time.Second))}
	eventually(t, 5*time.Second, "the first blocked Acquire is not queued", func() bool {
		return locktest.MustInspect(t, a, key).Waiters == 1
	})
	waiters = append(waiters, acquireAsync(t, ctx5(t), b, key, distlock.WithTTL(10*time.Second)))
	eventually(t, 5*time.Second, "the second blocked Acquire is not queued", func() bool {
		return locktest.MustInspect(t, a, key).Waiters == 2
	})
	queue := s.keysMatching(t, "distlock:*:q:"+key)
	if len(queue) != 1 {
		t.Fatalf("wait queues of %s: %v", key, queue)
	}
	if err := s.admin().Persist(ctx5(t), queue[0]).Err(); err != nil {
		t.Fatal(err)
	}
	info := locktest.MustInspect(t, a, key)
	if !info.Held || info.Waiters != 2 || info.Leak != "the wait queue has no expiry" {
		t.Fatalf("a queue without expiry reported %+v", info)
	}
	if held, err := distlock.ForceRelease(ctx5(t), a, key); err != nil || !held {
		t.Fatalf("ForceRelease = %v, %v", held, err)
	}
	wantErr(t, old.Release(ctx5(t)), distlock.ErrLeaseLost)
	first := <-waiters[0]
	if first == nil {
		return
	}
	info = locktest.MustInspect(t, a, key)
	if info.Holder != distlock.HolderID(first.Token()) || info.Waiters != 1 || info.Leak != "" {
		t.Fatalf("after ForceRelease: %+v, want the first waiter holding, the second queued, no leak", info)
	}
	mustRelease(t, first)
	if second := <-waiters[1]; second != nil {
		mustRelease(t, second)
	}
}

// listPages: pages of a List are exact and deterministic with many more
// keys than a page, whatever glob characters the prefixes hold, and keys
// that share only an unescaped glob's match are left out.
func listPages(t *testing.T, s *server) {
	l := s.locker(t, "pages", &redissingle.Options{Prefix: "p*g[e]/"})
	other := s.locker(t, "pages-other", &redissingle.Options{Prefix: "pXge/"})
	dir := uniqueKey(t) + "/?*/"
	var want []string
	for i := range 40 {
		key := fmt.Sprintf("%s%02d", dir, 39-i)
		want = append(want, key)
		defer mustRelease(t, mustAcquire(t, l, key, distlock.WithTTL(30*time.Second)))
	}
	slices.Sort(want)
	defer mustRelease(t, mustAcquire(t, other, dir+"00", distlock.WithTTL(30*time.Second)))
	defer mustRelease(t, mustAcquire(t, l, strings.Replace(dir, "?", "x", 1)+"00", distlock.WithTTL(30*time.Second)))

	var got []string
	page := distlock.Page{Limit: 3}
	for i := 0; ; i++ {
		if i > 14 {
			t.Fatalf("List did not end after %d pages: %v", i, got)
		}
		list, err := distlock.List(ctx5(t), l, dir, page)
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Locks) != 3 && list.Next != "" {
			t.Fatalf("page %d has %d entries and a next page", i, len(list.Locks))
		}
		for _, info := range list.Locks {
			got = append(got, info.Key)
		}
		if page.Cursor = list.Next; page.Cursor == "" {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
}

// forceReleaseWakes: a blocked Acquire, whose poll is 30 s away, is woken
// by ForceRelease at once, as by a release.
func forceReleaseWakes(t *testing.T, s *server) {
	a := s.locker(t, "wake-a", nil)
	b := s.locker(t, "wake-b", &redissingle.Options{PollInterval: 30 * time.Second})
	key := uniqueKey(t)
	old := mustAcquire(t, a, key, distlock.WithTTL(30*time.Second))
	type got struct {
		ls  distlock.Lease
		err error
		at  time.Time
	}
	done := make(chan got, 1)
	go func() {
		ls, err := b.Acquire(ctx5(t), key, distlock.WithTTL(10*time.Second))
		done <- got{ls, err, time.Now()}
	}()
	eventually(t, 5*time.Second, "the blocked Acquire is not queued", func() bool {
		return locktest.MustInspect(t, a, key).Waiters == 1
	})
	time.Sleep(50 * time.Millisecond) // past its first attempts
	start := time.Now()
	if held, err := distlock.ForceRelease(ctx5(t), a, key); err != nil || !held {
		t.Fatalf("ForceRelease = %v, %v", held, err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("blocked Acquire after ForceRelease: %v", r.err)
	}
	defer mustRelease(t, r.ls)
	if d := r.at.Sub(start); d > time.Second {
		t.Fatalf("blocked Acquire woke %v after ForceRelease, want a push wake-up", d)
	}
	if r.ls.Fence() <= old.Fence() {
		t.Fatalf("fence after ForceRelease %d, want > %d", r.ls.Fence(), old.Fence())
	}
	wantErr(t, old.Extend(ctx5(t), time.Second), distlock.ErrLeaseLost)
	if info := locktest.MustInspect(t, a, key); info.Holder != distlock.HolderID(r.ls.Token()) {
		t.Fatalf("the evicted lease's Extend touched the next holder: %+v", info)
	}
}

// inspectSilent: on a server that answers nothing, each call returns
// within inspectTimeout (1 s) even with context.Background(), with an
// error matching ErrUnavailable.
func inspectSilent(t *testing.T, s *server) {
	l := s.locker(t, "silent", nil)
	locktest.MustInspect(t, l, "warm-up") // a connection in the pool
	s.node.Link("silent").Blackhole()
	defer s.node.Link("silent").Heal()
	unavailable(t, l, 1500*time.Millisecond)
}

// TestInspectUnreachable: with nothing listening on the server's port,
// each call fails with ErrUnavailable at once. It needs no container.
func TestInspectUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	l, err := redissingle.New(newClient(t, addr), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	unavailable(t, l, time.Second)
}

// unavailable checks that Inspect, List and ForceRelease on l, with a
// bounded context and with context.Background(), fail with
// ErrUnavailable within limit each.
func unavailable(t *testing.T, l *redissingle.Locker, limit time.Duration) {
	t.Helper()
	for _, ctx := range []context.Context{ctx5(t), context.Background()} {
		calls := map[string]func() error{
			"Inspect":      func() error { _, err := l.Inspect(ctx, "k"); return err },
			"List":         func() error { _, err := l.List(ctx, "", distlock.Page{}); return err },
			"ForceRelease": func() error { _, err := l.ForceRelease(ctx, "k"); return err },
		}
		for name, call := range calls {
			start := time.Now()
			err := call()
			if d := time.Since(start); d > limit {
				t.Fatalf("%s took %v, want at most %v", name, d, limit)
			}
			wantErr(t, err, distlock.ErrUnavailable)
		}
	}
}

// An operator's view of a lock and its forced release, over a client you
// own. It needs a Redis server at localhost:6379, so it is compiled but
// not run by go test.
func ExampleLocker_Inspect() {
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer client.Close()
	locker, err := redissingle.New(client, &redissingle.Options{Prefix: "myapp:"})
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	info, err := locker.Inspect(ctx, "invoice:42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("held %t by %s for %v more, %d waiting\n", info.Held, info.Holder, info.TTL, info.Waiters)

	// Every lock with a leak (a key set without expiry, say) under
	// "invoice:", freed: the next waiter is handed the key at once.
	page := distlock.Page{}
	for {
		list, err := locker.List(ctx, "invoice:", page)
		if err != nil {
			log.Fatal(err)
		}
		for _, info := range list.Locks {
			if info.Leak != "" {
				fmt.Println("freeing", info.Key, "-", info.Leak)
				if _, err := locker.ForceRelease(ctx, info.Key); err != nil {
					log.Fatal(err)
				}
			}
		}
		if page.Cursor = list.Next; page.Cursor == "" {
			break
		}
	}
}
