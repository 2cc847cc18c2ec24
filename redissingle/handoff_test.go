package redissingle_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redissingle"
)

// TestHandoff checks where a release hands the key on: to the queue
// after a TryAcquire took an expired key, past a waiter whose Locker is
// gone, and to a waiter whose notification was lost.
func TestHandoff(t *testing.T) {
	s := startRedis(t)
	t.Run("TryAcquiredKeyHandedOnToQueue", func(t *testing.T) { handoffAfterTryAcquire(t, s) })
	t.Run("DeadWaiterSkipped", func(t *testing.T) { handoffSkipsDeadWaiter(t, s) })
	t.Run("LostNotificationRecovered", func(t *testing.T) { handoffLostNotification(t, s) })
}

// handoffAfterTryAcquire checks that when a holder expires and a
// TryAcquire takes the key ahead of a queued waiter, that TryAcquire's
// release hands the key to the waiter ("token:fence") and wakes it by
// push, with a newer fence.
func handoffAfterTryAcquire(t *testing.T, s *server) {
	t.Parallel()
	ctx := context.Background()
	// Push alone can wake the waiter within the test: its poll interval
	// is a minute, and the holder it queued behind had the default TTL.
	a, c := s.locker(t, "a", nil), s.locker(t, "c", nil)
	w := s.locker(t, "w", &redissingle.Options{PollInterval: time.Minute})
	key := uniqueKey(t)
	held := mustAcquire(t, a, key)
	got := acquireAsync(t, ctx, w, key, slowRetry)
	eventually(t, 5*time.Second, "waiter never queued", func() bool {
		return len(s.keysMatching(t, "distlock:*:q:"+key)) == 1
	})
	// The holder shortens its TTL and expires without a release: the
	// queue stays, the waiter sleeps on, and a TryAcquire takes the key.
	if err := held.Extend(ctx, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "holder never expired", func() bool { return s.admin().Exists(ctx, key).Val() == 0 })
	between, err := c.TryAcquire(ctx, key)
	if err != nil {
		t.Fatalf("TryAcquire of the expired key: %v", err)
	}
	start := time.Now()
	mustRelease(t, between)
	value := s.admin().Get(ctx, key).Val() // the release's hand-off: "token:fence"
	var ls distlock.Lease
	select {
	case ls = <-got:
	case <-time.After(5 * time.Second):
		t.Fatalf("waiter not woken %v after the release of a TryAcquired key; a queue was waiting", time.Since(start))
	}
	if ls == nil {
		return
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("hand-off took %v", d)
	}
	if ls.Fence() <= between.Fence() {
		t.Fatalf("fence %d after %d", ls.Fence(), between.Fence())
	}
	if want := fmt.Sprint(ls.Token(), ":", ls.Fence()); value != want {
		t.Fatalf("value after the release %q, want %q: the release did not hand the key over", value, want)
	}
	mustRelease(t, ls)
	s.noLeftovers(t, key)
}

// handoffSkipsDeadWaiter checks that a release skips a queue entry whose
// channel has no subscriber and serves the live waiter behind it.
func handoffSkipsDeadWaiter(t *testing.T, s *server) {
	t.Parallel()
	ctx := context.Background()
	a, b := s.locker(t, "a", nil), s.locker(t, "b", nil)
	key := uniqueKey(t)
	held := mustAcquire(t, a, key)
	got := make(chan error, 1)
	go func() {
		ls, err := b.Acquire(ctx, key, slowRetry)
		if err == nil {
			err = ls.Release(ctx)
		}
		got <- err
	}()
	var q string
	eventually(t, 5*time.Second, "waiter not queued", func() bool {
		qs := s.keysMatching(t, "distlock:*:q:"+key)
		if len(qs) == 1 {
			q = qs[0]
		}
		return q != ""
	})
	// A waiter whose process died: its Locker's channel has no subscriber.
	dead := "distlock:w:dead|1|00112233445566778899aabbccddeeff|30000"
	if err := s.admin().LPush(ctx, q, dead).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	mustRelease(t, held)
	if err := <-got; err != nil {
		t.Fatalf("live waiter: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("live waiter served after %v", d)
	}
	s.noLeftovers(t, key)
}

// handoffLostNotification checks that a waiter whose hand-off
// notification was lost (its connections cut during the release) still
// takes the key.
func handoffLostNotification(t *testing.T, s *server) {
	t.Parallel()
	ctx := context.Background()
	a := s.locker(t, "a", nil)
	b := s.locker(t, "lost-b", &redissingle.Options{Lock: distlock.Options{RetryMin: 20 * time.Millisecond, RetryMax: 40 * time.Millisecond}})
	key := uniqueKey(t)
	held := mustAcquire(t, a, key)
	got := make(chan error, 1)
	go func() {
		ls, err := b.Acquire(ctx, key)
		if err == nil {
			err = ls.Release(ctx)
		}
		got <- err
	}()
	eventually(t, 5*time.Second, "waiter not queued", func() bool {
		return len(s.keysMatching(t, "distlock:*:q:"+key)) == 1
	})
	// Cut b's connections (its subscription among them) while the
	// release hands over: the notification is lost; b must notice.
	link := s.node.Link("lost-b")
	link.Blackhole()
	mustRelease(t, held)
	time.Sleep(100 * time.Millisecond)
	link.Heal()
	link.Reset()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("waiter never took the key handed over while its notification was lost")
	}
	s.noLeftovers(t, key)
}

// TestStaleHandoffIsConfirmed checks that a hand-off notification read
// late is confirmed with the server before it is trusted. A release hands
// the key to waiter W, but W's notification is read late (its pub/sub
// reader is held); meanwhile the handed key expires, another client C
// takes it, and W polls (finding it held by C). When W reads the
// notification it asks the server (compare-and-PEXPIRE on its token)
// instead of trusting the message: W's Acquire returns a lease only after
// C releases, with a newer fence.
func TestStaleHandoffIsConfirmed(t *testing.T) {
	r := startStaleHandoff(t)
	r.readStaleThenC()
}

// TestStaleHandoffAfterASecondHandoff checks that a late notification
// does not grant its fence when the key was handed to the same waiter
// again since: as TestStaleHandoffIsConfirmed, but C releases while W's
// reader is still held, handing the key to W a second time, with a newer
// fence. W reads the stale notification first: the key carries W's token
// with the second fence, and W's lease has a fence newer than C's.
func TestStaleHandoffAfterASecondHandoff(t *testing.T) {
	r := startStaleHandoff(t)
	r.secondHandoff()
}

// The TTLs of the stale hand-off tests.
const (
	staleWaiterTTL = 2 * time.Second  // the hand-off's key lives this long
	staleHolderTTL = 5 * time.Second  // W's first poll comes when this runs out
	staleOtherTTL  = 60 * time.Second // C's lease
)

// staleRun is the state of a stale hand-off test once C holds the key
// that was handed to W, and W's notification of it is still held.
type staleRun struct {
	t          *testing.T
	s          *server
	g          *pushGate
	key        string
	c          distlock.Lease // C's lease
	got        chan staleResult
	cReleasing *atomic.Bool // set just before C releases
}

// staleResult is W's Acquire's outcome.
type staleResult struct {
	ls          distlock.Lease
	err         error
	afterCstart bool // C had begun releasing when Acquire returned
}

// startStaleHandoff sets up the stale hand-off: W queues behind a holder,
// the holder's release hands the key to W while W's reader is held, the
// handed key expires, C takes it, and W polls and queues again.
func startStaleHandoff(t *testing.T) *staleRun {
	s := startRedis(t)
	ctx := context.Background()
	// A long PollInterval: W asks the server only when the holder's TTL
	// runs out, or when a notification or a subscription change wakes it.
	w, g := newGatedLocker(t, s, &redissingle.Options{PollInterval: 30 * time.Second})
	t.Cleanup(g.release)
	other := s.locker(t, "other", nil)
	r := &staleRun{t: t, s: s, g: g, key: uniqueKey(t), got: make(chan staleResult, 1), cReleasing: new(atomic.Bool)}

	holder := mustAcquire(t, other, r.key, distlock.WithTTL(staleHolderTTL))
	go func() {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second) // did-not-hang bound
		defer cancel()
		ls, err := w.Acquire(actx, r.key, distlock.WithTTL(staleWaiterTTL), distlock.WithRetryDelay(20*time.Millisecond, 40*time.Millisecond))
		r.got <- staleResult{ls, err, r.cReleasing.Load()}
	}()
	eventually(t, 5*time.Second, "W never queued", func() bool { return r.queueLen() == 1 })

	// The release hands the key to W; W's reader is held, so W does not
	// learn of it.
	g.hold()
	mustRelease(t, holder)
	if n := r.queueLen(); n != 0 {
		t.Fatalf("the release did not pop W's entry (queue length %d)", n)
	}
	// The handed key expires; C takes it.
	eventually(t, 2*staleWaiterTTL+2*time.Second, "the handed-off key never expired", func() bool {
		n, err := s.admin().Exists(ctx, r.key).Result()
		return err == nil && n == 0
	})
	select {
	case res := <-r.got:
		t.Fatalf("setup: W's Acquire returned before the handed key expired (W polled too early?): %v, %v", res.ls, res.err)
	default:
	}
	c, err := other.TryAcquire(ctx, r.key, distlock.WithTTL(staleOtherTTL))
	if err != nil {
		t.Fatalf("setup: C's TryAcquire after the hand-off expired: %v", err)
	}
	r.c = c
	t.Logf("hand-off expired; C holds the key with fence %d", c.Fence())
	// W polls when the first holder's TTL runs out: it finds C's key and
	// puts its entry back in the queue.
	eventually(t, staleHolderTTL+5*time.Second, "W never polled after C took the key", func() bool { return r.queueLen() == 1 })
	return r
}

// queueLen is the length of the key's wait queue (0 if none).
func (r *staleRun) queueLen() int64 {
	qs := r.s.keysMatching(r.t, "distlock:*:q:"+r.key)
	if len(qs) != 1 {
		return 0
	}
	n, _ := r.s.admin().LLen(context.Background(), qs[0]).Result()
	return n
}

// await is W's Acquire returning a lease after what.
func (r *staleRun) await(what string) staleResult {
	r.t.Helper()
	select {
	case res := <-r.got:
		if res.err != nil {
			r.t.Fatalf("W's Acquire after %s: %v", what, res.err)
		}
		return res
	case <-time.After(30 * time.Second):
		r.t.Fatalf("W's Acquire hung after %s", what)
	}
	return staleResult{}
}

// secondHandoff has C release while W's reader is still held: the key
// goes to W again, with a fence newer than C's. W reads only the stale
// first notification, and acts on it (a write on its command connection)
// before the second reaches it; its lease must carry the newer fence.
func (r *staleRun) secondHandoff() {
	t := r.t
	r.cReleasing.Store(true)
	mustRelease(t, r.c)
	if n := r.queueLen(); n != 0 {
		t.Fatalf("C's release did not pop W's entry (queue length %d)", n)
	}
	before := r.g.writes.Load()
	r.g.releaseOne()
	eventually(t, 20*time.Second, "W never acted on the stale notification", func() bool {
		return r.g.writes.Load() > before
	})
	time.Sleep(100 * time.Millisecond) // let it finish; passing does not depend on it
	r.g.release()
	res := r.await("the second hand-off")
	if res.ls.Fence() <= r.c.Fence() {
		t.Fatalf("fences went back: W's lease has fence %d, granted from the stale first hand-off, while C held fence %d before it", res.ls.Fence(), r.c.Fence())
	}
	mustRelease(t, res.ls)
}

// readStaleThenC lets W read the stale notification: W must ask the
// server (a write on its command connection) rather than return a lease,
// and may hold the key only after C releases it.
func (r *staleRun) readStaleThenC() {
	t, ctx, c := r.t, context.Background(), r.c
	before := r.g.writes.Load()
	r.g.release()
	acted := time.NewTimer(20 * time.Second)
	defer acted.Stop()
	for r.g.writes.Load() == before {
		select {
		case res := <-r.got:
			v, _ := r.s.admin().Get(ctx, r.key).Result()
			if res.err == nil {
				t.Fatalf("two holders: W's Acquire returned a lease (fence %d) from the stale hand-off, without asking the server, "+
					"while C holds the key (fence %d; server value %q)", res.ls.Fence(), c.Fence(), v)
			}
			t.Fatalf("W's Acquire failed on the stale hand-off instead of waiting for C: %v", res.err)
		case <-acted.C:
			t.Fatal("W neither asked the server nor returned after reading the notification")
		case <-time.After(5 * time.Millisecond):
		}
	}
	select {
	case res := <-r.got:
		t.Fatalf("W's Acquire returned while C holds the key (fence %d): lease %v, err %v", c.Fence(), res.ls, res.err)
	case <-time.After(200 * time.Millisecond): // a chance to misbehave; passing does not depend on it
	}
	r.cReleasing.Store(true)
	mustRelease(t, c)
	res := r.await("C released")
	if !res.afterCstart {
		t.Fatalf("two holders: W's lease (fence %d) was granted while C held the key (fence %d)", res.ls.Fence(), c.Fence())
	}
	if res.ls.Fence() <= c.Fence() {
		t.Fatalf("W's lease has fence %d, not newer than C's %d: granted from the stale hand-off", res.ls.Fence(), c.Fence())
	}
	mustRelease(t, res.ls)
	r.s.noLeftovers(t, r.key)
}
