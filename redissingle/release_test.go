package redissingle_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redissingle"
)

// TestReleaseAfterExpiryKeepsNextOwner checks that a lease that expired
// reports ErrLeaseLost on Release without touching the key another Locker
// took meanwhile, which stays extendable by its owner.
func TestReleaseAfterExpiryKeepsNextOwner(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	a, b := s.locker(t, "a", nil), s.locker(t, "b", nil)
	key := uniqueKey(t)
	la := mustAcquire(t, a, key, distlock.WithTTL(200*time.Millisecond))
	select {
	case <-la.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("Done not closed after the TTL")
	}
	wantErr(t, la.Err(), distlock.ErrLeaseLost)
	lb := mustAcquire(t, b, key)
	if lb.Fence() <= la.Fence() {
		t.Fatalf("fence %d after %d", lb.Fence(), la.Fence())
	}
	wantErr(t, la.Release(ctx), distlock.ErrLeaseLost)
	if got := s.admin().Get(ctx, key).Val(); !strings.HasPrefix(got, lb.Token()) {
		t.Fatalf("the old holder's release touched the new owner's key: value %q", got)
	}
	if err := lb.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("new owner's Extend: %v", err)
	}
	mustRelease(t, lb)
}

// TestHandoffToAbandonedWaiterPassesOn checks that a hand-off to a waiter
// that gave up is passed on by its Locker. W queues behind holder H and E
// behind W; W gives up while its link is blackholed, so its clean-up
// fails and gives up once W's TTL has passed, leaving W's entry at the
// head of the queue. H's release hands the key to W and notifies W's
// Locker, which no longer knows the waiter: it passes the key on, and E
// is woken by push, long before its 20 s poll.
func TestHandoffToAbandonedWaiterPassesOn(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	slow := &redissingle.Options{PollInterval: 20 * time.Second}
	h := s.locker(t, "h", slow)
	w := s.locker(t, "w", slow)
	e := s.locker(t, "e", slow)
	key := uniqueKey(t)
	queued := func(n int64) func() bool {
		return func() bool {
			qs := s.keysMatching(t, "distlock:*:q:"+key)
			return len(qs) == 1 && s.admin().LLen(ctx, qs[0]).Val() == n
		}
	}

	held := mustAcquire(t, h, key, distlock.WithTTL(30*time.Second))

	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	wdone := make(chan error, 1)
	go func() {
		ls, err := w.Acquire(wctx, key, distlock.WithTTL(time.Second))
		if err == nil {
			_ = ls.Release(ctx)
		}
		wdone <- err
	}()
	eventually(t, 5*time.Second, "W not queued", queued(1))

	ectx, ecancel := context.WithTimeout(ctx, 15*time.Second)
	defer ecancel()
	type result struct {
		ls  distlock.Lease
		err error
		at  time.Time
	}
	edone := make(chan result, 1)
	go func() {
		ls, err := e.Acquire(ectx, key, distlock.WithTTL(5*time.Second), distlock.WithRetryDelay(20*time.Second, 20*time.Second))
		edone <- result{ls, err, time.Now()}
	}()
	eventually(t, 5*time.Second, "E not queued", queued(2))

	// W gives up while blackholed: its clean-up times out (2 s read
	// timeout) and stops, W's 1 s TTL having passed.
	link := s.node.Link("w")
	link.Blackhole()
	wcancel()
	if err := <-wdone; !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("W: %v, want ErrNotAcquired", err)
	}
	time.Sleep(3 * time.Second)
	link.Heal()
	if !queued(2)() {
		t.Fatal("W's entry left the queue: the interleaving was not reproduced")
	}

	released := time.Now()
	mustRelease(t, held)
	select {
	case r := <-edone:
		if r.err != nil {
			t.Fatalf("E: %v", r.err)
		}
		if d := r.at.Sub(released); d > 3*time.Second {
			t.Fatalf("E woken %v after the release, its poll interval being 20 s", d)
		}
		mustRelease(t, r.ls)
	case <-time.After(3 * time.Second):
		v := s.admin().Get(ctx, key).Val()
		ecancel()
		<-edone
		t.Fatalf("E not woken 3s after the release (value %q)", v)
	}
	eventually(t, 5*time.Second, "keys left", func() bool { return len(s.leftovers(t, key)) == 0 })
}
