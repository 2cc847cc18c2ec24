//go:build review

package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/zklock"
)

// TestReviewKeysListOfLongKeys holds 100 distinct keys of MaxKeyLen bytes
// that are mostly "/" (escaped to about 12 KB each), which docs/keys.md
// says every backend accepts, then lists the prefix. The getChildren
// reply of the prefix is then about 1.2 MB, over ZooKeeper's default
// jute.maxbuffer (1 MiB). List must succeed and the held leases must stay
// valid (List shares the Locker's session with them).
func TestReviewKeysListOfLongKeys(t *testing.T) {
	e := startEnsemble(t)
	l := e.locker(t, "a1", &zklock.Options{Prefix: "/reviewLong"})
	ctx := context.Background()
	const n = 100
	var leases []distlock.Lease
	for i := range n {
		key := strings.Repeat("/", distlock.MaxKeyLen-4) + fmt.Sprintf("%04d", i)
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ls, err := l.TryAcquire(cctx, key, distlock.WithTTL(2*time.Minute))
		cancel()
		if err != nil {
			t.Fatalf("TryAcquire key %d of %d bytes: %v", i, len(key), err)
		}
		leases = append(leases, ls)
	}
	defer func() {
		for _, ls := range leases {
			_ = ls.Release(context.Background())
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	lst, err := distlock.List(cctx, l, "", distlock.Page{Limit: 10})
	cancel()
	if err != nil {
		t.Errorf("List of %d held keys of MaxKeyLen bytes: %v", n, err)
	} else if len(lst.Locks) != 10 {
		t.Errorf("List page: %d locks, want 10", len(lst.Locks))
	}
	time.Sleep(2 * time.Second)
	lost := 0
	for _, ls := range leases {
		select {
		case <-ls.Done():
			lost++
		default:
		}
	}
	if lost > 0 {
		t.Errorf("after List, %d of %d leases ended (Done fired)", lost, n)
	}
}

// TestReviewKeysPrefixInvalidUTF8 opens two tenants whose prefixes differ
// only in an invalid UTF-8 byte ("/t\xff" and "/t\xfe"), which
// checkPrefix accepts (it refuses only NUL). ZooKeeper decodes paths as
// UTF-8 (Java), so both would be "/t\uFFFD": either New refuses such a
// prefix with distlock.ErrInvalidArgument, or the tenants hold the same
// key at once.
func TestReviewKeysPrefixInvalidUTF8(t *testing.T) {
	e := startEnsemble(t)
	var ls []*zklock.Locker
	for _, p := range []string{"/t\xff", "/t\xfe"} {
		l, err := zklock.New(e.Addrs("c"), withTick(&zklock.Options{Prefix: p}))
		if errors.Is(err, distlock.ErrInvalidArgument) {
			return // refused up front: fine
		}
		if err != nil {
			t.Fatalf("New(prefix %q): %v", p, err)
		}
		t.Cleanup(func() { _ = l.Close() })
		ls = append(ls, l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	la, err := ls[0].TryAcquire(ctx, "k", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatalf("New accepted prefix %q, but TryAcquire fails: %v (errors.Is ErrInvalidArgument: %v)",
			"/t\xff", err, errors.Is(err, distlock.ErrInvalidArgument))
	}
	defer la.Release(context.Background())
	lb, err := ls[1].TryAcquire(ctx, "k", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatalf("tenant /t\\xfe TryAcquire of the key tenant /t\\xff holds: %v: two tenants share a lock", err)
	}
	_ = lb.Release(context.Background())
}
