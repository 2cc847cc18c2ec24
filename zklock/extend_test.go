package zklock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/zklock"
)

// testAutoExtend: under WithAutoExtend a lease outlives three TTLs while
// every other TryAcquire of its key fails with ErrNotAcquired, with a
// validity within 0.6 x TTL ahead; after its release the key is free.
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

// testExtendAfterLoss: Extend succeeds while held; once the node is
// deleted it returns ErrLeaseLost and does not create the node again; a
// TTL of 0 is refused with ErrInvalidArgument.
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
