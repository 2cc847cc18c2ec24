package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/zklock"
)

// TestLocker runs the functional tests on one 3-server ensemble.
func TestLocker(t *testing.T) {
	e := startEnsemble(t)
	for _, tc := range []struct {
		name string
		f    func(*testing.T, *ensemble)
	}{
		{"TryAcquire", testTryAcquire},
		{"FIFOWithoutHerd", testFIFO},
		{"CancelledWaiterLeavesNoNode", testCancel},
		{"Revoked", testRevoked},
		{"DeletedBeforeGrant", testDeletedBeforeGrant},
		{"ExpiresWithoutExtension", testExpiry},
		{"AutoExtend", testAutoExtend},
		{"ExtendAfterLoss", testExtendAfterLoss},
		{"ParentsDoNotAccumulate", testParents},
		{"SessionPerTTL", testSessionPerTTL},
		{"MultiIfHeld", testMultiIfHeld},
		{"Close", testClose},
		{"InvalidArguments", testInvalid},
		{"HostileKeys", testHostileKeys},
		{"CauseContexts", testCauseContexts},
		{"OpenByURL", testURL},
		{"TickTime", testTickTime},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, e) })
	}
}

var tokenRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

func testTryAcquire(t *testing.T, e *ensemble) {
	a, b := e.locker(t, "a", nil), e.locker(t, "b", nil)
	key := uniqueKey(t)
	ctx := context.Background()
	const ttl = 2 * time.Second
	start := time.Now()
	la, err := a.TryAcquire(ctx, key, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	if !tokenRE.MatchString(la.Token()) || la.Key() != key || la.Fence() == 0 {
		t.Fatalf("lease: token %q key %q fence %d", la.Token(), la.Key(), la.Fence())
	}
	// Validity: 2/3 x the 2 s session - half a 250 ms tick - drift
	// (1186 ms; under SafeFraction's 1.2 s), from before the listing.
	if vu := la.ValidUntil(); vu.Before(start.Add(1186*time.Millisecond)) || vu.After(time.Now().Add(1186*time.Millisecond)) {
		t.Fatalf("ValidUntil %v after the call, want 1.186s after the listing", vu.Sub(start))
	}
	nodes := e.lockNodes(t, key)
	if len(nodes) != 1 || nodes[0][:3+32] != "_c_"+la.Token() {
		t.Fatalf("lock nodes %v, want one carrying the token", nodes)
	}
	_, err = b.TryAcquire(ctx, key, distlock.WithTTL(ttl))
	wantErr(t, err, distlock.ErrNotAcquired)
	notErr(t, err, distlock.ErrUnavailable)
	if n := e.lockNodes(t, key); len(n) != 1 {
		t.Fatalf("the refused TryAcquire left its node: %v", n)
	}
	mustRelease(t, la)
	if err := la.Release(ctx); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	wantErr(t, la.Err(), distlock.ErrReleased)
	lb, err := b.TryAcquire(ctx, key, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	if lb.Fence() <= la.Fence() {
		t.Fatalf("fence %d after %d", lb.Fence(), la.Fence())
	}
	mustRelease(t, lb)
	// The fence is the node's czxid: it keeps growing when the parent
	// is deleted and created again (the sequence number restarts).
	eventually(t, 10*time.Second, "parent container not deleted", func() bool {
		return !e.exists(t, zklock.DefaultPrefix+"/"+key)
	})
	lc, err := a.TryAcquire(ctx, key, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	defer mustRelease(t, lc)
	if lc.Fence() <= lb.Fence() {
		t.Fatalf("fence %d after the parent was recreated, previous %d", lc.Fence(), lb.Fence())
	}
	if n := e.lockNodes(t, key); len(n) != 1 || n[0][len(n[0])-10:] != "0000000000" {
		t.Fatalf("expected the sequence to restart in a new parent: %v", n)
	}
}

// testFIFO: waiters queued in order are served in order, each woken by
// its predecessor's release, and each watches only its own node and its
// predecessor.
func testFIFO(t *testing.T, e *ensemble) {
	const n = 6
	key := uniqueKey(t)
	holder := e.locker(t, "holder", nil)
	first := mustAcquire(t, holder, key)
	watchesBefore := e.watches(t)
	lockers := make([]*zklock.Locker, n)
	for i := range lockers {
		lockers[i] = e.locker(t, fmt.Sprint("w", i), nil)
	}
	var mu sync.Mutex
	var order []int
	var fences []uint64
	var wg sync.WaitGroup
	for i, l := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ls, err := l.Acquire(context.Background(), key)
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			fences = append(fences, ls.Fence())
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			_ = ls.Release(context.Background())
		}()
		want := i + 2
		eventually(t, 10*time.Second, "waiter did not queue", func() bool { return len(e.lockNodes(t, key)) == want })
	}
	// Each waiter: a watch on its own node and one on its predecessor;
	// the holder: one on its own node. A waiter's node appears before its
	// watches are set, so wait for them; more than 2 per waiter is a herd.
	eventually(t, 10*time.Second, "waiters' watches not set", func() bool { return e.watches(t)-watchesBefore >= 2*n })
	if w := e.watches(t) - watchesBefore; w != 2*n {
		t.Errorf("%d new watches for %d waiters, want %d (own + predecessor each)", w, n, 2*n)
	}
	mustRelease(t, first)
	wg.Wait()
	for i := range order {
		if order[i] != i {
			t.Fatalf("served in order %v, want arrival order", order)
		}
		if i > 0 && fences[i] <= fences[i-1] {
			t.Fatalf("fences %v not increasing", fences)
		}
	}
	if n := e.lockNodes(t, key); len(n) != 0 {
		t.Fatalf("nodes left: %v", n)
	}
}

func testCancel(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	held := mustAcquire(t, e.locker(t, "a", nil), key)
	defer mustRelease(t, held)
	b := e.locker(t, "b", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := b.Acquire(ctx, key)
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancelled Acquire returned after %v", d)
	}
	eventually(t, 5*time.Second, "the cancelled waiter's node stayed", func() bool { return len(e.lockNodes(t, key)) == 1 })
	// A context cancelled mid-wait, not by deadline.
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel2() }()
	_, err = b.Acquire(ctx2, key)
	wantErr(t, err, distlock.ErrNotAcquired, context.Canceled)
	eventually(t, 5*time.Second, "the cancelled waiter's node stayed", func() bool { return len(e.lockNodes(t, key)) == 1 })
	// An already cancelled context does nothing.
	_, err = b.TryAcquire(ctx2, key)
	wantErr(t, err, distlock.ErrNotAcquired, context.Canceled)
}

// testRevoked: an operator deletes the holder's node: Done fires at once
// and the next waiter gets the key.
func testRevoked(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	a := e.locker(t, "a", nil)
	ls := mustAcquire(t, a, key, distlock.WithAutoExtend(time.Hour))
	got := make(chan distlock.Lease, 1)
	go func() {
		lb, err := e.locker(t, "b", nil).Acquire(context.Background(), key)
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		got <- lb
	}()
	eventually(t, 5*time.Second, "waiter did not queue", func() bool { return len(e.lockNodes(t, key)) == 2 })
	at := time.Now()
	if err := e.admin.Delete(zklock.DefaultPrefix+"/"+key+"/"+e.lockNodes(t, key)[0], -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ls.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done did not fire after the node was deleted")
	}
	t.Logf("notified %v after the deletion", time.Since(at))
	wantErr(t, ls.Err(), distlock.ErrLeaseLost, zklock.ErrNodeDeleted)
	wantErr(t, ls.Release(context.Background()), distlock.ErrLeaseLost)
	if lb := <-got; lb != nil {
		mustRelease(t, lb)
	}
}

// testExpiry: without extension the lease ends at its validity and its
// node is deleted, so another client gets the key; the late Release says
// the lease was lost and frees nobody else's.
func testExpiry(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	a, b := e.locker(t, "a", nil), e.locker(t, "b", nil)
	const ttl = time.Second
	la := mustAcquire(t, a, key, distlock.WithTTL(ttl))
	start := time.Now()
	lb := mustAcquire(t, b, key, distlock.WithTTL(5*ttl))
	took := time.Since(start)
	wantErr(t, la.Err(), distlock.ErrLeaseLost, lease.ErrExpired)
	if took > 3*ttl {
		t.Fatalf("B acquired %v after A's 1s lease began", took)
	}
	wantErr(t, la.Release(context.Background()), distlock.ErrLeaseLost)
	if lb.Err() != nil {
		t.Fatalf("A's late release disturbed B: %v", lb.Err())
	}
	if _, err := a.TryAcquire(context.Background(), key); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("A's late release freed B's key: %v", err)
	}
	mustRelease(t, lb)
}

func testAutoExtend(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	const ttl = time.Second
	ls := mustAcquire(t, e.locker(t, "a", nil), key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))
	b := e.locker(t, "b", nil)
	deadline := time.Now().Add(3 * ttl)
	for time.Now().Before(deadline) {
		if _, err := b.TryAcquire(context.Background(), key); !errors.Is(err, distlock.ErrNotAcquired) {
			t.Fatalf("TryAcquire while extended: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ls.Err() != nil {
		t.Fatalf("lost under auto-extension: %v", ls.Err())
	}
	if left := time.Until(ls.ValidUntil()); left <= 0 || left > 600*time.Millisecond {
		t.Fatalf("validity left %v, want within 0.6 x TTL", left)
	}
	mustRelease(t, ls)
	mustRelease(t, mustAcquire(t, b, key))
}

func testExtendAfterLoss(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	a := e.locker(t, "a", nil)
	ls := mustAcquire(t, a, key, distlock.WithTTL(time.Second))
	if err := ls.Extend(context.Background(), time.Second); err != nil {
		t.Fatalf("Extend while held: %v", err)
	}
	if err := e.admin.Delete(zklock.DefaultPrefix+"/"+key+"/"+e.lockNodes(t, key)[0], -1); err != nil {
		t.Fatal(err)
	}
	err := ls.Extend(context.Background(), time.Second)
	wantErr(t, err, distlock.ErrLeaseLost)
	if n := e.lockNodes(t, key); len(n) != 0 {
		t.Fatalf("Extend re-created the node: %v", n)
	}
	wantErr(t, ls.Extend(context.Background(), 0), distlock.ErrInvalidArgument)
}

// testParents: many keys, acquired and released, leave no parent nodes.
func testParents(t *testing.T, e *ensemble) {
	a := e.locker(t, "a", &zklock.Options{Prefix: "/parents-test/locks"})
	for i := 0; i < 20; i++ {
		mustRelease(t, mustAcquire(t, a, fmt.Sprintf("k/%d", i)))
	}
	eventually(t, 15*time.Second, "lock parents left behind", func() bool {
		return !e.exists(t, "/parents-test")
	})
}

func testSessionPerTTL(t *testing.T, e *ensemble) {
	a := e.locker(t, "a", &zklock.Options{MaxSessions: 2})
	ctx := context.Background()
	var leases []distlock.Lease
	for _, ttl := range []time.Duration{time.Second, 2 * time.Second, time.Second} {
		ls, err := a.TryAcquire(ctx, uniqueKey(t), distlock.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, ls)
	}
	_, err := a.TryAcquire(ctx, uniqueKey(t), distlock.WithTTL(3*time.Second))
	wantErr(t, err, distlock.ErrInvalidArgument)
	owners := map[int64]bool{}
	for _, ls := range leases {
		_, st, err := e.admin.Exists(zklock.DefaultPrefix + "/" + ls.Key() + "/" + e.lockNodes(t, ls.Key())[0])
		if err != nil {
			t.Fatal(err)
		}
		owners[st.EphemeralOwner] = true
		mustRelease(t, ls)
	}
	if len(owners) != 2 {
		t.Fatalf("3 leases with 2 distinct TTLs in %d sessions, want 2", len(owners))
	}
}

func testMultiIfHeld(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	a := e.locker(t, "a", nil)
	ctx := context.Background()
	value := "/ifheld-" + key
	if _, err := e.admin.Create(value, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.admin.Delete(value, -1) }()
	ls := mustAcquire(t, a, key)
	if _, err := a.MultiIfHeld(ctx, ls, &zk.SetDataRequest{Path: value, Data: []byte("1"), Version: -1}); err != nil {
		t.Fatalf("write while held: %v", err)
	}
	if err := e.admin.Delete(zklock.DefaultPrefix+"/"+key+"/"+e.lockNodes(t, key)[0], -1); err != nil {
		t.Fatal(err)
	}
	_, err := a.MultiIfHeld(ctx, ls, &zk.SetDataRequest{Path: value, Data: []byte("2"), Version: -1})
	wantErr(t, err, distlock.ErrLeaseLost)
	if v, _, _ := e.admin.Get(value); string(v) != "1" {
		t.Fatalf("value %q after the refused write", v)
	}
	_ = ls.Release(ctx)
	_, err = a.MultiIfHeld(ctx, ls, &zk.SetDataRequest{Path: value, Data: []byte("3"), Version: -1})
	wantErr(t, err, distlock.ErrInvalidArgument)
}

func testClose(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	a, err := zklock.New(e.Addrs("a"), withTick(nil))
	if err != nil {
		t.Fatal(err)
	}
	b, err := zklock.New(e.Addrs("b"), withTick(nil))
	if err != nil {
		t.Fatal(err)
	}
	ls := mustAcquire(t, a, key)
	waited := make(chan error, 1)
	go func() {
		_, err := b.Acquire(context.Background(), key)
		waited <- err
	}()
	eventually(t, 5*time.Second, "waiter did not queue", func() bool { return len(e.lockNodes(t, key)) == 2 })
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, <-waited, distlock.ErrClosed)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ls.Done():
	case <-time.After(time.Second):
		t.Fatal("Done did not fire at Close")
	}
	wantErr(t, ls.Err(), distlock.ErrLeaseLost, distlock.ErrClosed)
	eventually(t, 5*time.Second, "nodes left after Close", func() bool { return len(e.lockNodes(t, key)) == 0 })
	_, err = a.TryAcquire(context.Background(), key)
	wantErr(t, err, distlock.ErrClosed)
	_, err = a.Acquire(context.Background(), key)
	wantErr(t, err, distlock.ErrClosed)
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func testInvalid(t *testing.T, e *ensemble) {
	a := e.locker(t, "a", nil)
	ctx := context.Background()
	_, err := a.TryAcquire(ctx, "")
	wantErr(t, err, distlock.ErrInvalidArgument)
	_, err = a.Acquire(ctx, "k", distlock.WithTTL(-time.Second))
	wantErr(t, err, distlock.ErrInvalidArgument)
	_, err = a.Acquire(ctx, "k", distlock.WithRetryDelay(time.Second, time.Millisecond))
	wantErr(t, err, distlock.ErrInvalidArgument)
	for _, o := range []zklock.Options{{Prefix: "relative"}, {Prefix: "/a/"}, {Prefix: "/a/../b"}, {Prefix: "/" + strings.Repeat("p", zklock.MaxPrefixLen)}, {SafeFraction: 1}, {SessionTimeout: -1}} {
		if _, err := zklock.New([]string{"h:2181"}, &o); !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	for _, s := range [][]string{nil, {""}, {"h:1", "h:1"}} {
		if _, err := zklock.New(s, nil); !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Errorf("servers %q: %v", s, err)
		}
	}
}

func testURL(t *testing.T, e *ensemble) {
	u := "zk://" + e.ConnectString("url") + "/url-test/locks?ttl=2s&session_timeout=3s&safe_fraction=0.5&tick_time=250ms&connect_timeout=1s&max_sessions=1"
	l, err := distlock.Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	key := "a/b"
	start := time.Now()
	ls, err := l.TryAcquire(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if vu := ls.ValidUntil(); vu.Before(start.Add(1500*time.Millisecond)) || vu.After(time.Now().Add(1500*time.Millisecond)) {
		t.Fatalf("validity %v, want min(2s, 0.5 x 3s) after the listing", vu.Sub(start))
	}
	if !e.exists(t, "/url-test/locks/a%2Fb") {
		t.Fatal("the prefix from the URL path was not used")
	}
	mustRelease(t, ls)
}

// testDeletedBeforeGrant: the own node is deleted (revoked) after its
// watched read and before the lease is registered as its holder. The
// deletion's event then finds no holder; the acquisition must still not
// hand out a lease whose node is gone (which would report its loss only
// at the end of its validity).
func testDeletedBeforeGrant(t *testing.T, e *ensemble) {
	l := e.locker(t, "a", nil)
	key := uniqueKey(t)
	restore := zklock.SetHookBeforeHold(func(own string) {
		if err := e.admin.Delete(own, -1); err != nil {
			t.Errorf("delete %s: %v", own, err)
			return
		}
		for deadline := time.Now().Add(10 * time.Second); !zklock.DeletionSeen(l, own); {
			if time.Now().After(deadline) {
				t.Errorf("the deletion of %s never reached the session", own)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	ls, err := l.TryAcquire(context.Background(), key)
	restore()
	if err == nil {
		select {
		case <-ls.Done():
		default:
			t.Fatalf("granted a lease whose node was deleted, Done open (valid until %v)", time.Until(ls.ValidUntil()))
		}
		return
	}
	if !errors.Is(err, zklock.ErrNodeDeleted) || !errors.Is(err, distlock.ErrUnavailable) {
		t.Fatalf("TryAcquire: %v; want ErrNodeDeleted and ErrUnavailable", err)
	}
	if nodes := e.lockNodes(t, key); len(nodes) != 0 {
		t.Fatalf("nodes left: %v", nodes)
	}
	// The key is free again.
	ls, err = l.TryAcquire(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	_ = ls.Release(context.Background())
}
