package zklock_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/zklock"
)

// TestUnreachable needs no container: nothing listens on the port.
func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	l, err := zklock.New([]string{addr}, &zklock.Options{ConnectTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	start := time.Now()
	_, err = l.TryAcquire(ctx, "k")
	wantErr(t, err, distlock.ErrUnavailable)
	notErr(t, err, distlock.ErrNotAcquired)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("TryAcquire took %v", d)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start = time.Now()
	_, err = l.Acquire(cctx, "k")
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded, distlock.ErrUnavailable)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Acquire with a 1s deadline took %v", d)
	}
	cctx, cancel = context.WithTimeoutCause(ctx, time.Second, errGaveUp)
	defer cancel()
	_, err = l.Acquire(cctx, "k")
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded, errGaveUp)
}

// TestFaults runs the fault tests on one 3-server ensemble; each leaves
// every server running and every link healed.
func TestFaults(t *testing.T) {
	e := startEnsemble(t)
	for _, tc := range []struct {
		name string
		f    func(*testing.T, *ensemble)
	}{
		{"LeaderKilled", func(t *testing.T, e *ensemble) { testServerKilled(t, e, true) }},
		{"FollowerKilled", func(t *testing.T, e *ensemble) { testServerKilled(t, e, false) }},
		{"HolderCutOff", testHolderCutOff},
		{"LostCreateReply", testLostCreateReply},
		{"WaiterSessionExpires", testWaiterSession},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, e) })
	}
}

// testServerKilled: with the leader (or a follower) killed, a held lease
// survives (its session moves to another server), others are refused,
// and acquire/release keep working.
func testServerKilled(t *testing.T, e *ensemble, leader bool) {
	ctx := context.Background()
	lead, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	victim := lead
	if !leader {
		victim = (lead + 1) % len(e.Nodes)
	}
	key := uniqueKey(t)
	const ttl = 2 * time.Second
	a, b := e.locker(t, "a", nil), e.locker(t, "b", nil)
	held := mustAcquire(t, a, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))
	if err := e.Nodes[victim].Kill(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Nodes[victim].Start(ctx); err != nil {
			t.Fatal(err)
		}
	}()
	deadline := time.Now().Add(3 * ttl)
	for time.Now().Before(deadline) {
		_, err := b.TryAcquire(ctx, key, distlock.WithTTL(ttl))
		if err == nil {
			t.Fatal("granted while held")
		}
		if !errors.Is(err, distlock.ErrNotAcquired) && !errors.Is(err, distlock.ErrUnavailable) {
			t.Fatalf("TryAcquire: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if held.Err() != nil {
		t.Fatalf("the lease was lost with one server down: %v", held.Err())
	}
	mustRelease(t, held)
	other := uniqueKey(t)
	for i := 0; i < 3; i++ {
		mustRelease(t, mustAcquire(t, b, key, distlock.WithTTL(ttl)))
		mustRelease(t, mustAcquire(t, a, other, distlock.WithTTL(ttl)))
	}
}

// testHolderCutOff: the holder loses every server: Done fires before the
// ensemble expires its session, so before anyone else gets the key.
func testHolderCutOff(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	const ttl = time.Second
	a, b := e.locker(t, "cut", nil), e.locker(t, "b", nil)
	held := mustAcquire(t, a, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))
	e.blackhole("cut", false)
	defer e.blackhole("cut", true)
	cut := time.Now()
	lb := mustAcquire(t, b, key, distlock.WithTTL(ttl))
	got := time.Now()
	select {
	case <-held.Done():
	default:
		t.Fatalf("B acquired %v after the cut, but A was not told", got.Sub(cut))
	}
	wantErr(t, held.Err(), distlock.ErrLeaseLost)
	t.Logf("B acquired %v after the cut; A's lease: %v", got.Sub(cut), held.Err())
	if got.Sub(cut) > 3*ttl {
		t.Fatalf("B acquired only %v after the cut", got.Sub(cut))
	}
	mustRelease(t, lb)
	e.blackhole("cut", true)
	wantErr(t, held.Release(context.Background()), distlock.ErrLeaseLost)
}

// testLostCreateReply: the create reaches the ensemble but its reply is
// lost: the node is found by its GUID and deleted as soon as the link
// carries replies again, not left until the caller's session expires.
func testLostCreateReply(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	const ttl = 10 * time.Second
	a, b, c := e.locker(t, "drop", nil), e.locker(t, "b", nil), e.locker(t, "c", nil)
	mustRelease(t, mustAcquire(t, a, key+".warm", distlock.WithTTL(ttl))) // the session exists
	held := mustAcquire(t, c, key)                                        // the parent exists
	for _, p := range e.Links("drop") {
		p.DropReplies()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := a.TryAcquire(ctx, key, distlock.WithTTL(ttl))
	if err == nil {
		t.Fatal("TryAcquire returned a lease although every reply was dropped")
	}
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
	if n := e.lockNodes(t, key); len(n) != 2 {
		t.Fatalf("after the lost reply: lock nodes %v, want C's and A's orphan (A: %v)", n, err)
	}
	e.blackhole("drop", true)
	start := time.Now()
	eventually(t, ttl/2, "the orphan stayed", func() bool { return len(e.lockNodes(t, key)) == 1 })
	t.Logf("orphan deleted %v after the heal", time.Since(start))
	mustRelease(t, held)
	mustRelease(t, mustAcquire(t, b, key, distlock.WithTTL(time.Second)))
	eventually(t, 5*time.Second, "nodes left", func() bool { return len(e.lockNodes(t, key)) == 0 })
}

// testWaiterSession: a queued waiter cut off from every server returns a
// SessionError about a session timeout later, and its queue entry does
// not block the next client.
func testWaiterSession(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	const ttl = time.Second
	a, w, c := e.locker(t, "a", nil), e.locker(t, "w", nil), e.locker(t, "c", nil)
	held := mustAcquire(t, a, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*ttl)
		defer cancel()
		ls, err := w.Acquire(ctx, key, distlock.WithTTL(ttl))
		if err == nil {
			_ = ls.Release(context.Background())
		}
		done <- err
	}()
	eventually(t, 5*time.Second, "waiter did not queue", func() bool { return len(e.lockNodes(t, key)) == 2 })
	e.blackhole("w", false)
	defer e.blackhole("w", true)
	cut := time.Now()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * ttl):
		t.Fatal("the cut-off waiter did not return within 5 TTLs")
	}
	t.Logf("waiter returned %v after the cut: %v", time.Since(cut), err)
	var se *zklock.SessionError
	if !errors.As(err, &se) {
		t.Fatalf("waiter: %v, want a SessionError", err)
	}
	wantErr(t, err, distlock.ErrUnavailable)
	eventually(t, 5*ttl, "the dead waiter's node stayed", func() bool { return len(e.lockNodes(t, key)) == 1 })
	mustRelease(t, held)
	mustRelease(t, mustAcquire(t, c, key, distlock.WithTTL(ttl)))
}
