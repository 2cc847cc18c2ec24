package etcdlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
)

// testFIFOHandOff queues 6 waiters one after the other: they must be
// served in arrival order, each within a few ms of the previous release.
func (c *cluster) testFIFOHandOff(t *testing.T) {
	t.Parallel()
	key := uniqueKey(t)
	holder := c.locker(t, "h", nil)
	admin := c.admin(t)
	first := mustAcquire(t, holder, key)
	const n = 6
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		l := c.locker(t, fmt.Sprint("w", i), nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ls, err := l.Acquire(ctx, key)
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			errs <- ls.Release(ctx)
		}()
		// Arrival order: wait until this waiter's entry is queued.
		eventually(t, 10*time.Second, "waiter queued", func() bool { return len(entries(t, admin, key)) == i+2 })
	}
	mustRelease(t, first)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range order {
		if w != i {
			t.Fatalf("served in order %v, want arrival order", order)
		}
	}
	if e := entries(t, admin, key); len(e) != 0 {
		t.Fatalf("entries left: %v", e)
	}
}

// testCancelledWaiter: a waiter whose ctx ends returns both sentinels and
// leaves no entry behind.
func (c *cluster) testCancelledWaiter(t *testing.T) {
	t.Parallel()
	a, b := c.locker(t, "a", nil), c.locker(t, "b", nil)
	admin := c.admin(t)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := b.Acquire(ctx, key)
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
	if e := entries(t, admin, key); len(e) != 1 {
		t.Fatalf("entries after the cancelled wait: %v, want the holder's only", e)
	}
	mustRelease(t, ls)
}

// testWaiterBehindALeavingWaiter: c waits behind b, who waits behind the
// holder a. When b gives up, c's watch sees its predecessor deleted, but
// a still holds: c must read the queue and wait on, not take the deletion
// for a release (whether its member or the leader serves that read).
func (c *cluster) testWaiterBehindALeavingWaiter(t *testing.T) {
	t.Parallel()
	a, b, w := c.locker(t, "a", nil), c.locker(t, "b", nil), c.locker(t, "c", nil)
	admin := c.admin(t)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key)
	bctx, bcancel := context.WithCancel(context.Background())
	bdone := make(chan error, 1)
	go func() {
		_, err := b.Acquire(bctx, key)
		bdone <- err
	}()
	waitEntries(t, admin, key, 2)
	type result struct {
		ls  distlock.Lease
		err error
	}
	got := make(chan result, 1)
	go func() { // returns at the latest when w closes, at the test's end
		ls, err := w.Acquire(context.Background(), key)
		got <- result{ls, err}
	}()
	waitEntries(t, admin, key, 3)
	bcancel()
	wantErr(t, <-bdone, distlock.ErrNotAcquired, context.Canceled)
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("c's Acquire failed while a holds: %v", r.err)
		}
		t.Fatalf("c was granted (fence %d) while a still holds (fence %d)", r.ls.Fence(), ls.Fence())
	case <-time.After(500 * time.Millisecond):
	}
	if e := entries(t, admin, key); len(e) != 2 {
		t.Fatalf("entries after b left: %v, want a's and c's", e)
	}
	mustRelease(t, ls)
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("c's Acquire after a's release: %v", r.err)
		}
		if r.ls.Fence() <= ls.Fence() {
			t.Fatalf("c's fence %d, not above a's %d", r.ls.Fence(), ls.Fence())
		}
		mustRelease(t, r.ls)
	case <-time.After(10 * time.Second):
		t.Fatal("c was not granted after a's release")
	}
}

// TestPredecessorGoneBeforeWatch: the predecessor's deletion commits
// after the waiter's read found it but before the waiter's watch starts.
// The watch starts after the deletion and never hears of it, so the
// waiter must notice from its check of the predecessor; the poll (set to a
// minute here) must not be what frees it. A second case changes an
// unrelated key instead: the predecessor stays, and the waiter must keep
// waiting for it and then get the lock as soon as it is released.
func TestPredecessorGoneBeforeWatch(t *testing.T) {
	c := startCluster(t)
	opts := &etcdlock.Options{PollInterval: time.Minute}
	holder, waiter := c.locker(t, "h", opts), c.locker(t, "w", opts)
	admin := c.admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, tc := range []struct {
		name        string
		deletePred  bool // else write an unrelated key
		releaseLate bool // release the holder once the waiter watches
	}{
		{name: "deleted", deletePred: true},
		{name: "still there", releaseLate: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := uniqueKey(t)
			held := mustAcquire(t, holder, key)
			var once sync.Once
			watching := make(chan struct{})
			etcdlock.SetBeforeWatch(func(pred string) {
				once.Do(func() {
					defer close(watching)
					var err error
					if tc.deletePred {
						_, err = admin.Delete(ctx, pred)
					} else {
						_, err = admin.Put(ctx, key+"-unrelated", "x")
					}
					if err != nil {
						t.Errorf("before the watch: %v", err)
					}
				})
			})
			defer etcdlock.SetBeforeWatch(nil)
			type result struct {
				took time.Duration
				err  error
			}
			got := make(chan result, 1)
			start := time.Now()
			go func() {
				ls, err := waiter.Acquire(ctx, key)
				if err == nil {
					defer func() { _ = ls.Release(context.Background()) }()
				}
				got <- result{time.Since(start), err}
			}()
			<-watching
			if tc.releaseLate {
				select {
				case r := <-got:
					t.Fatalf("the waiter returned (%v, after %v) while the holder still held the key", r.err, r.took)
				case <-time.After(300 * time.Millisecond):
				}
				mustRelease(t, held)
			}
			select {
			case r := <-got:
				if r.err != nil {
					t.Fatalf("Acquire: %v", r.err)
				}
				t.Logf("acquired after %v", r.took)
			case <-time.After(20 * time.Second):
				t.Fatal("the waiter is still waiting 20 s after its predecessor went (poll 1 min)")
			}
			if !tc.releaseLate {
				_ = held.Release(context.Background()) // its entry is gone; the lease reports that
			}
		})
	}
}

// TestCutOffWhileWatchStarts (S26): the waiter is cut off from the cluster
// just as it starts watching its predecessor, so the member never confirms
// the watch and the client's Watch call waits for a stream that does not
// come back. The poll is set to a minute, so only the session's death can
// end that wait in time: Acquire returns ErrSessionExpired within about a
// TTL, not when the poll or Close comes.
func TestCutOffWhileWatchStarts(t *testing.T) {
	c := startCluster(t)
	holder := c.locker(t, "h", nil)
	waiter := c.locker(t, "waiter", &etcdlock.Options{PollInterval: time.Minute})
	key := uniqueKey(t)
	ttl := 2 * time.Second
	held := mustAcquire(t, holder, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Minute))
	defer mustRelease(t, held)
	heals := make(chan func(), 1)
	defer func() {
		select {
		case heal := <-heals:
			heal()
		default:
		}
	}()
	var once sync.Once
	etcdlock.SetBeforeWatch(func(string) { once.Do(func() { heals <- c.cut("waiter") }) })
	defer etcdlock.SetBeforeWatch(nil)
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ls, err := waiter.Acquire(ctx, key, distlock.WithTTL(ttl))
		if err == nil {
			_ = ls.Release(context.Background())
		}
		errc <- err
	}()
	select {
	case err := <-errc:
		wantErr(t, err, etcdlock.ErrSessionExpired, distlock.ErrUnavailable)
		t.Logf("the waiter returned %v after it started: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(4 * ttl):
		t.Errorf("the waiter cut off while its watch started still waits %v later", 4*ttl)
	}
}

// TestKeeperWatch checks what the stream keeper relies on: etcd accepts a
// watch from KeeperRev (a revision no cluster reaches), confirms it, keeps
// it open and reports nothing when its key changes.
func TestKeeperWatch(t *testing.T) {
	c := startCluster(t)
	admin := c.admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := uniqueKey(t)
	wch := admin.Watch(clientv3.WithRequireLeader(ctx), key, clientv3.WithRev(etcdlock.KeeperRev), clientv3.WithCreatedNotify())
	wr := <-wch
	if !wr.Created || wr.Canceled || wr.Err() != nil {
		t.Fatalf("watch from KeeperRev: created %v, canceled %v, err %v", wr.Created, wr.Canceled, wr.Err())
	}
	for i := range 3 {
		if _, err := admin.Put(ctx, key, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	// A watch of the same key from the current revision hears those
	// writes at once; the keeper's must hear nothing.
	select {
	case wr, ok := <-wch:
		t.Fatalf("the keeper's watch reported %+v (open %v)", wr, ok)
	case <-time.After(500 * time.Millisecond):
	}
}

// TestQueueRead checks the waiter's read after its predecessor's deletion
// directly, on entries written by hand: ahead = the entry in front of
// mine. Whatever the read is served by (the member, or the leader as the
// fallback), it must report an entry ahead while one exists, none once it
// is deleted, and a missing own entry as missing.
func TestQueueRead(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	l := c.locker(t, "q", nil)
	admin := c.admin(t)
	key := "queue-read"
	pfx := l.Prefix(key)
	if _, err := admin.Put(ctx, pfx+"a", "ahead"); err != nil {
		t.Fatal(err)
	}
	put, err := admin.Put(ctx, pfx+"b", "mine")
	if err != nil {
		t.Fatal(err)
	}
	my, rev := pfx+"b", put.Header.Revision

	// A deletion was seen (of some other entry) at the current revision,
	// but the entry ahead is still there: the member's read shows it, so
	// the leader decides, and shows it too.
	for _, gone := range []int64{0, rev} {
		_, mine, ahead, err := l.QueueRead(ctx, key, my, rev, gone)
		if err != nil || !mine || ahead != 1 {
			t.Fatalf("gone %d, entry ahead present: mine %v, ahead %d, err %v; want mine, 1 ahead", gone, mine, ahead, err)
		}
	}

	del, err := admin.Delete(ctx, pfx+"a")
	if err != nil {
		t.Fatal(err)
	}
	g := del.Header.Revision
	revision, mine, ahead, err := l.QueueRead(ctx, key, my, rev, g)
	if err != nil || !mine || ahead != 0 || revision < g {
		t.Fatalf("after the deletion at %d: revision %d, mine %v, ahead %d, err %v; want revision >= %d, mine, none ahead", g, revision, mine, ahead, err, g)
	}

	// A deletion the member cannot have applied yet (a revision not
	// reached): the member's read is not trusted, the leader's is.
	revision, mine, ahead, err = l.QueueRead(ctx, key, my, rev, g+1000)
	if err != nil || !mine || ahead != 0 || revision >= g+1000 {
		t.Fatalf("gone beyond the cluster's revision: revision %d, mine %v, ahead %d, err %v", revision, mine, ahead, err)
	}

	// The own entry went (its lease expired or was revoked): reported
	// missing by either read.
	if _, err := admin.Delete(ctx, my); err != nil {
		t.Fatal(err)
	}
	_, mine, _, err = l.QueueRead(ctx, key, my, rev, g)
	if err != nil || mine {
		t.Fatalf("own entry deleted: mine %v, err %v; want it reported missing", mine, err)
	}

	// Created again (a late try of the enqueue): another entry under the
	// same name, still missing for the waiter that queued at rev.
	if _, err := admin.Put(ctx, my, "mine again"); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []int64{0, g} {
		_, mine, _, err = l.QueueRead(ctx, key, my, rev, gone)
		if err != nil || mine {
			t.Fatalf("own entry re-created (gone %d): mine %v, err %v; want it reported missing", gone, mine, err)
		}
	}
}
