package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/zklock"
)

var tokenRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// testTryAcquire: a free key is granted with a 32-hex-digit token, the
// key, a fence and a validity of 2/3 x the session timeout - half a tick
// - drift from before the listing, under one node carrying the token; a
// held key is refused with ErrNotAcquired (not ErrUnavailable) and leaves
// no node; Release is idempotent; the next holder's fence is higher.
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
}

// testFenceAcrossParents: the fence is the node's czxid, so it keeps
// growing when the lock's parent container is deleted and created again,
// although the sequence numbers start over.
func testFenceAcrossParents(t *testing.T, e *ensemble) {
	a := e.locker(t, "a", nil)
	key := uniqueKey(t)
	ctx := context.Background()
	const ttl = 2 * time.Second
	first, err := a.TryAcquire(ctx, key, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	mustRelease(t, first)
	eventually(t, 10*time.Second, "parent container not deleted", func() bool {
		return !e.exists(t, zklock.DefaultPrefix+"/"+key)
	})
	next, err := a.TryAcquire(ctx, key, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	defer mustRelease(t, next)
	if next.Fence() <= first.Fence() {
		t.Fatalf("fence %d after the parent was recreated, previous %d", next.Fence(), first.Fence())
	}
	if n := e.lockNodes(t, key); len(n) != 1 || n[0][len(n[0])-10:] != "0000000000" {
		t.Fatalf("expected the sequence to restart in a new parent: %v", n)
	}
}

// testSessionPerTTL: with Options.SessionTimeout 0, leases of two
// distinct TTLs live in two sessions (their nodes' ephemeral owners), and
// a third TTL beyond MaxSessions is refused with ErrInvalidArgument.
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

// testInvalid: an empty key, a negative TTL, an inverted retry delay, a
// bad prefix or safe fraction, a negative session timeout and empty or
// duplicate server addresses are refused with ErrInvalidArgument.
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

// testDeletedBeforeGrant: when the own node is deleted (revoked) after
// its watched read and before the lease is registered as its holder, the
// deletion's event finds no holder; the acquisition then hands out no
// lease whose node is gone (which would report its loss only at the end
// of its validity): it fails with ErrNodeDeleted and ErrUnavailable,
// leaves no node, and the key is free again.
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
