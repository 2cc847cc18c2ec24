package zklock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/zklock"
)

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

// testMultiIfHeld: MultiIfHeld writes while the lease holds; once the
// node is deleted the write is refused with ErrLeaseLost and not applied;
// after Release the lease is refused with ErrInvalidArgument.
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
