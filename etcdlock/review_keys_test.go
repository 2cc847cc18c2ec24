//go:build review

package etcdlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
)

// TestReviewKeysOwnLeaseIDAfterKey holds "a" and then, on the same
// session, "a/<that session's lease id>" and "a/<id>/<id>", whose entries
// are "a/<id>/<id>" and "a/<id>/<id>/<id>": the second key's lock prefix
// contains the first key's entry name. A waiter queues on "a"; each key
// must report its own holder and waiters, ForceRelease of the longer keys
// must leave "a" alone, and the release of "a" must grant the waiter.
func TestReviewKeysOwnLeaseIDAfterKey(t *testing.T) {
	c := startMember(t)
	opts := &etcdlock.Options{Prefix: "rv/"}
	a1, a2 := c.locker(t, "a1", opts), c.locker(t, "a2", opts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	la, err := a1.TryAcquire(ctx, "a", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	entry := etcdlock.HeldDriver(a1, la).Entry()
	id := entry[strings.LastIndexByte(entry, '/')+1:]
	k1, k2 := "a/"+id, "a/"+id+"/"+id
	l1, err := a1.TryAcquire(ctx, k1, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatalf("TryAcquire %q on the session of %q: %v", k1, entry, err)
	}
	l2, err := a1.TryAcquire(ctx, k2, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatalf("TryAcquire %q: %v", k2, err)
	}
	got := acquireAsync(a2, "a", distlock.WithTTL(time.Minute))
	time.Sleep(time.Second)
	for k, ls := range map[string]distlock.Lease{"a": la, k1: l1, k2: l2} {
		in, err := distlock.Inspect(ctx, a2, k)
		if err != nil || !in.Held || in.Holder != distlock.HolderID(ls.Token()) {
			t.Fatalf("Inspect %q: %+v %v, want held by its own lease", k, in, err)
		}
		if want := map[bool]int{true: 1, false: 0}[k == "a"]; in.Waiters != want {
			t.Fatalf("Inspect %q: %d waiters, want %d", k, in.Waiters, want)
		}
	}
	for _, k := range []string{k2, k1} {
		if was, err := distlock.ForceRelease(ctx, a2, k); err != nil || !was {
			t.Fatalf("ForceRelease %q: %v %v", k, was, err)
		}
		if err := la.Extend(ctx, time.Minute); err != nil {
			t.Fatalf("after ForceRelease %q, Extend of %q: %v", k, "a", err)
		}
	}
	select {
	case g := <-got:
		t.Fatalf("waiter on %q granted while it is held: %+v", "a", g)
	default:
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wantGranted(t, got, "after the release of a")
}
