package leader_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/leader"
	"github.com/distlock/distlock/memlock"
)

// handles returns n clients on one new memlock space, closed when t ends.
func handles(t *testing.T, n int) (*memlock.Locker, []distlock.Locker) {
	t.Helper()
	first := memlock.New(nil)
	out := make([]distlock.Locker, n)
	for i := range out {
		h := first.NewHandle()
		t.Cleanup(func() { _ = h.Close() })
		out[i] = h
	}
	t.Cleanup(func() { _ = first.Close() })
	return first, out
}

// TestOneLeaderAtATime runs 3 candidates whose terms are short (the work
// returns after a few milliseconds) and checks with a shared counter,
// inside the work while its context is live, that no two lead at once;
// fences strictly increase across the terms of all candidates.
func TestOneLeaderAtATime(t *testing.T) {
	_, ls := handles(t, 3)
	key := locktest.UniqueKey(t)
	var leaders, overlaps atomic.Int32
	work := func(int) leader.Work {
		return func(ctx context.Context, _ leader.Term) error {
			defer leaders.Add(-1)
			if leaders.Add(1) != 1 && ctx.Err() == nil {
				overlaps.Add(1)
			}
			time.Sleep(time.Duration(1+rand.IntN(3)) * time.Millisecond)
			if leaders.Load() != 1 && ctx.Err() == nil {
				overlaps.Add(1)
			}
			if rand.IntN(2) == 0 {
				return errors.New("work failed")
			}
			return nil
		}
	}
	g := startGroup(t, ls, key, work, leader.WithBackoff(time.Millisecond, 2*time.Millisecond),
		leader.WithLockOptions(distlock.WithTTL(time.Second)))
	g.waitFor(leader.Elected, 60, 20*time.Second)
	g.stopAll()
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d overlaps of two live leaders", n)
	}
	elected := g.of(leader.Elected)
	wantIncreasing(t, elected)
	who := map[int]int{}
	for _, ev := range elected {
		who[ev.who]++
	}
	t.Logf("%d terms, by candidate: %v", len(elected), who)
	if len(who) < 2 {
		t.Fatalf("terms by candidate %v: want leadership to move between candidates", who)
	}
}

// TestFailoverOnRevoke revokes the leader's key as an operator would: the
// leader's work sees its context cancelled with a cause matching
// ErrLeaseLost, reports Lost, and another candidate leads with a higher
// fence.
func TestFailoverOnRevoke(t *testing.T) {
	admin, ls := handles(t, 3)
	key := locktest.UniqueKey(t)
	causes := []chan error{make(chan error, 1), make(chan error, 1), make(chan error, 1)}
	g := startGroup(t, ls, key, blockUntilEnd(causes), leader.WithBackoff(300*time.Millisecond, time.Second))
	first := g.waitFor(leader.Elected, 1, 5*time.Second)[0]
	if !g.cands[first.who].IsLeader() {
		t.Fatalf("candidate %d was elected but IsLeader is false", first.who)
	}
	if !admin.Revoke(key) {
		t.Fatal("Revoke: the key was not held")
	}
	second := g.waitFor(leader.Elected, 2, 5*time.Second)[1]
	locktest.WantErr(t, recvCause(t, causes[first.who]), distlock.ErrLeaseLost)
	lost := g.waitFor(leader.Lost, 1, time.Second)[0]
	if lost.who != first.who || lost.Term != first.Term {
		t.Fatalf("Lost event %+v, want candidate %d's term %+v", lost, first.who, first.Term)
	}
	locktest.WantErr(t, lost.Err, distlock.ErrLeaseLost)
	if second.who == first.who {
		t.Fatalf("candidate %d led again while two others waited", first.who)
	}
	if g.cands[first.who].IsLeader() {
		t.Fatalf("candidate %d: IsLeader after its lease was revoked", first.who)
	}
	wantIncreasing(t, []seen{first, second})
}

// TestResignHandsOver: the leader resigns; its work's context is cancelled
// with ErrResigned, another candidate leads, and the resigned one waits
// its resign delay (here longer than the test) instead of campaigning.
func TestResignHandsOver(t *testing.T) {
	_, ls := handles(t, 3)
	key := locktest.UniqueKey(t)
	causes := []chan error{make(chan error, 1), make(chan error, 1), make(chan error, 1)}
	g := startGroup(t, ls, key, blockUntilEnd(causes), leader.WithResignDelay(time.Hour))
	first := g.waitFor(leader.Elected, 1, 5*time.Second)[0]
	c := g.cands[first.who]
	other := g.cands[(first.who+1)%3]
	if err := other.Resign(context.Background()); err != nil {
		t.Fatalf("Resign of a candidate that does not lead: %v", err)
	}
	term, ok := c.Term()
	if !ok || term != first.Term {
		t.Fatalf("Term() = %+v, %v; want %+v, true", term, ok, first.Term)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Resign(ctx); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	if c.IsLeader() {
		t.Fatal("IsLeader after Resign returned")
	}
	locktest.WantErr(t, recvCause(t, causes[first.who]), leader.ErrResigned)
	res := g.waitFor(leader.Resigned, 1, time.Second)[0]
	locktest.WantErr(t, res.Err, leader.ErrResigned)
	second := g.waitFor(leader.Elected, 2, 5*time.Second)[1]
	if second.who == first.who {
		t.Fatalf("candidate %d led again within its resign delay", first.who)
	}
	wantIncreasing(t, []seen{first, second})
	if err := g.stop(first.who); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run of the resigned candidate: %v, want context.Canceled", err)
	}
}

// TestWorkErrorCampaignsAgain: work that fails ends its term (SteppedDown
// with the error, the key released) and the candidate leads again after
// its backoff, with a higher fence each term.
func TestWorkErrorCampaignsAgain(t *testing.T) {
	_, ls := handles(t, 1)
	errBoom := errors.New("boom")
	var calls atomic.Int32
	work := func(int) leader.Work {
		return func(ctx context.Context, _ leader.Term) error {
			if calls.Add(1) <= 2 {
				return errBoom
			}
			<-ctx.Done()
			return nil
		}
	}
	g := startGroup(t, ls, locktest.UniqueKey(t), work, leader.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
	elected := g.waitFor(leader.Elected, 3, 5*time.Second)
	wantIncreasing(t, elected)
	downs := g.of(leader.SteppedDown)
	if len(downs) != 2 {
		t.Fatalf("SteppedDown events: %v, want 2", downs)
	}
	for _, ev := range downs {
		if !errors.Is(ev.Err, errBoom) {
			t.Fatalf("SteppedDown Err %v, want the work's error", ev.Err)
		}
	}
	if !g.cands[0].IsLeader() {
		t.Fatal("not leading in its third term")
	}
}

// TestMaxTermEndsTerm: with WithMaxTerm, the watchdog stops and the term
// ends Lost; the candidate campaigns again and leads a new term.
func TestMaxTermEndsTerm(t *testing.T) {
	_, ls := handles(t, 1)
	causes := []chan error{make(chan error, 1)}
	g := startGroup(t, ls, locktest.UniqueKey(t), blockUntilEnd(causes),
		leader.WithMaxTerm(60*time.Millisecond), leader.WithBackoff(time.Millisecond, time.Millisecond),
		leader.WithLockOptions(distlock.WithTTL(30*time.Millisecond)))
	g.waitFor(leader.Elected, 2, 5*time.Second)
	lost := g.waitFor(leader.Lost, 1, time.Second)[0]
	locktest.WantErr(t, lost.Err, distlock.ErrLeaseLost)
	if d := lost.At.Sub(lost.Term.Start); d < 50*time.Millisecond {
		t.Fatalf("term lost after %v, before its maximum term", d)
	}
}
