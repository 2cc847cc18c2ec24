package zklock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/zklock"
)

// TestRegressions runs, on one 3-server ensemble, the tests of fixes that
// no other test forces.
func TestRegressions(t *testing.T) {
	e := startEnsemble(t)
	for _, tc := range []struct {
		name string
		f    func(*testing.T, *ensemble)
	}{
		{"JanitorKeepsCleanupAcrossSessions", testJanitorAcrossSessions},
		{"CloseDuringExtension", testCloseDuringExtension},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, e) })
	}
}

// testJanitorAcrossSessions: a create abandoned while the connection is
// down waits in go-zookeeper's send queue and is sent on the next server
// session once the old one has expired. The janitor's clean-up, queued
// under the old session, must still find the node (by its token) on the
// new session and delete it; dropping it because the session changed
// left the node in the key's queue for the new session's whole life.
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

	// Every byte to and from a's servers is held, not dropped: a gives
	// its connection up and its next connect request waits in the link
	// until the heal, after the ensemble expired the session, so that
	// go-zookeeper's first reconnection is told of the expiry and its
	// second opens the new session, before it would fail the requests
	// it queued (after one attempt on each server).
	for _, p := range e.Links("jan") {
		p.SetLatency(time.Minute)
	}
	healed := false
	defer func() {
		if !healed {
			e.blackhole("jan", true)
		}
	}()
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
	healed = true
	eventually(t, 30*time.Second, "a did not get a new session", func() bool {
		sid, connected := zklock.SessionID(a, ttl)
		return connected && sid != 0 && sid != oldSID
	})

	// The create lands on the new session (the parent's cversion counts
	// its node) and the janitor deletes the node (counted too).
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
			sid, _ := zklock.SessionID(a, ttl)
			t.Logf("session %x replaced by %x; the node of the abandoned create was made and deleted (parent's cversion +%d)", oldSID, sid, cv-before)
			break
		}
		if time.Now().After(deadline) {
			if orphan {
				t.Fatalf("the node of the create abandoned under the old session is still in the queue on the new one: %v", nodes)
			}
			t.Fatalf("the abandoned create never landed (lock nodes %v, parent's cversion +%d): the test proves nothing", nodes, cv-before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mustRelease(t, held)
	mustRelease(t, mustAcquire(t, b, key, distlock.WithTTL(ttl)))
}

// testCloseDuringExtension: Close while a watchdog is in the middle of an
// extension returns. Close used to stop the watchdogs while holding the
// Locker's mutex, which the extension's request needs (to register as a
// call in flight): the watchdog waited for Close and Close for it.
func testCloseDuringExtension(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	const ttl = 15 * time.Second // validity 9 s: an extension every 3 s, with 6 s left
	l, err := zklock.New(e.Addrs("x"), withTick(nil))
	if err != nil {
		t.Fatal(err)
	}
	closing := false
	defer func() {
		if !closing { // a Close that hung would hang here too
			_ = l.Close()
		}
	}()
	entered := make(chan struct{})
	ended := make(chan error, 1)
	var once sync.Once
	restore := zklock.SetHookBeforeExtend(func(ctx context.Context) {
		once.Do(func() { // the first extension waits until Close stops it
			close(entered)
			<-ctx.Done()
			ended <- ctx.Err()
		})
	})
	ls := mustAcquire(t, l, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))
	select {
	case <-entered:
	case <-time.After(ttl):
		restore()
		t.Fatal("the watchdog did not extend")
	}
	closing = true
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(20 * time.Second):
		// The hook stays set: the hung watchdog read it without a
		// happens-before edge to this goroutine.
		t.Fatal("Close did not return within 20 s while a watchdog was extending")
	}
	restore() // Close joined the watchdog
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("the extension's context ended with %v: Close did not meet the extension in flight", err)
	}
	wantErr(t, ls.Err(), distlock.ErrLeaseLost)
	eventually(t, 5*time.Second, "nodes left after Close", func() bool { return len(e.lockNodes(t, key)) == 0 })
}
