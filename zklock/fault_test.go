package zklock_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/zklock"
)

// TestUnreachable: with nothing listening (no container needed),
// TryAcquire fails with ErrUnavailable within its connect timeout, and
// Acquire ends at its context's deadline with ErrNotAcquired, the
// context's error (and cause) and ErrUnavailable.
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
		{"WaiterCutDuringCreate", testWaiterCutDuringCreate},
		{"JanitorKeepsCleanupAcrossSessions", testJanitorAcrossSessions},
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
			t.Fatalf("granted while held (held: %v, valid %v)", held.Err(), time.Until(held.ValidUntil()))
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

// testWaiterCutDuringCreate: a waiter cut off while its create is in
// flight does not know whether it is queued; its node, if the create took
// effect, lives under its session. It returns a SessionError once that
// session is presumed expired, as a queued waiter does, instead of
// waiting for a session that cannot come back until its context ends.
func testWaiterCutDuringCreate(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	const ttl = time.Second
	a, w, c := e.locker(t, "a", nil), e.locker(t, "w2", nil), e.locker(t, "c", nil)
	held := mustAcquire(t, a, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))
	var once sync.Once
	defer zklock.SetHookBeforeCreate(func() { once.Do(func() { e.blackhole("w2", false) }) })()
	defer e.blackhole("w2", true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*ttl)
	defer cancel()
	start := time.Now()
	ls, err := w.Acquire(ctx, key, distlock.WithTTL(ttl))
	if err == nil {
		_ = ls.Release(context.Background())
		t.Fatal("acquired a held key")
	}
	t.Logf("waiter returned %v after the cut: %v", time.Since(start), err)
	var se *zklock.SessionError
	if !errors.As(err, &se) || time.Since(start) > 5*ttl {
		t.Fatalf("waiter: %v after %v, want a SessionError within 5 TTLs", err, time.Since(start))
	}
	mustRelease(t, held)
	mustRelease(t, mustAcquire(t, c, key, distlock.WithTTL(ttl)))
}

// testJanitorAcrossSessions: a create abandoned while the connection is
// down waits in go-zookeeper's send queue and is sent on the next server
// session once the old one has expired. The janitor's clean-up, queued
// under the old session, finds the node (by its token) on the new session
// and deletes it, so it does not stay in the key's queue for the new
// session's whole life.
func testJanitorAcrossSessions(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	const ttl = 2 * time.Second // a's session timeout
	a, b, c := e.locker(t, "jan", nil), e.locker(t, "b", nil), e.locker(t, "c", nil)
	held := mustAcquire(t, c, key, distlock.WithAutoExtend(time.Hour)) // the parent exists when the create lands
	// The marker opens a's session; its node goes when the ensemble
	// expires that session.
	marker := mustAcquire(t, a, key+".marker", distlock.WithTTL(ttl))
	defer func() { _ = marker.Release(context.Background()) }() // lost by then
	oldSID, connected := zklock.SessionID(a, ttl)
	if oldSID == 0 || !connected {
		t.Fatalf("a's session: id %x, connected %v", oldSID, connected)
	}
	parent := a.Path(key)
	cversion := func() int32 {
		_, st, err := e.admin.Exists(parent)
		if err != nil || st == nil {
			t.Fatalf("stat %s: %v", parent, err)
		}
		return st.Cversion
	}
	before := cversion()

	stall(t, e, "jan")
	eventually(t, 10*time.Second, "a's connection was not given up", func() bool {
		_, connected := zklock.SessionID(a, ttl)
		return !connected
	})
	// The create is queued in go-zookeeper (no session to send it on)
	// and abandoned: the janitor is asked to search for the token.
	token := lease.NewToken()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := zklock.AbandonedCreate(ctx, a, ttl, oldSID, key, token)
	cancel()
	if err == nil {
		t.Fatal("the create returned a node although a was cut off")
	}
	wantErr(t, err, context.DeadlineExceeded)

	eventually(t, 10*ttl, "the ensemble did not expire a's session", func() bool {
		return len(e.lockNodes(t, key+".marker")) == 0
	})
	e.blackhole("jan", true) // heals the latency too
	eventually(t, 30*time.Second, "a did not get a new session", func() bool {
		sid, connected := zklock.SessionID(a, ttl)
		return connected && sid != 0 && sid != oldSID
	})

	waitOrphanDeleted(t, e, key, token, cversion, before)
	sid, _ := zklock.SessionID(a, ttl)
	t.Logf("session %x replaced by %x", oldSID, sid)
	mustRelease(t, held)
	mustRelease(t, mustAcquire(t, b, key, distlock.WithTTL(ttl)))
}

// stall holds, not drops, every byte to and from client's servers until
// the test ends: the client gives its connection up and its next connect
// request waits in the link until the heal, after the ensemble expired
// the session, so that go-zookeeper's first reconnection is told of the
// expiry and its second opens the new session, before it would fail the
// requests it queued (after one attempt on each server).
func stall(t *testing.T, e *ensemble, client string) {
	t.Helper()
	for _, p := range e.Links(client) {
		p.SetLatency(time.Minute)
	}
	t.Cleanup(func() { e.blackhole(client, true) })
}

// waitOrphanDeleted waits until the create carrying token has landed (the
// parent's cversion, read by cversion, counts its node) and the janitor
// has deleted the node (counted too), and fails the test if the node
// stays in key's queue or never appears.
func waitOrphanDeleted(t *testing.T, e *ensemble, key, token string, cversion func() int32, before int32) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		nodes := e.lockNodes(t, key)
		orphan := false
		for _, n := range nodes {
			if strings.HasPrefix(n, "_c_"+token) {
				orphan = true
			}
		}
		cv := cversion()
		if !orphan && cv >= before+2 {
			t.Logf("the node of the abandoned create was made and deleted (parent's cversion +%d)", cv-before)
			return
		}
		if time.Now().After(deadline) {
			if orphan {
				t.Fatalf("the node of the create abandoned under the old session is still in the queue on the new one: %v", nodes)
			}
			t.Fatalf("the abandoned create never landed (lock nodes %v, parent's cversion +%d): the test proves nothing", nodes, cv-before)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
