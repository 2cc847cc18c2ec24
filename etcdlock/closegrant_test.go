package etcdlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
)

// TestCloseDuringGrant: Close runs while an Acquire grants the lock, and
// the session dies (keepalives stopped) after grant's first check of it
// and before the lease is attached. The Acquire must fail with an error
// matching distlock.ErrClosed and, as Close promises, delete its entry:
// the session's etcd lease is not revoked (another lock holds it), so an
// entry left behind would block the key for the TTL.
func TestCloseDuringGrant(t *testing.T) {
	c := startMember(t)
	admin := c.admin(t)
	l := c.locker(t, "l", nil)
	key := uniqueKey(t)
	// other shares the session; its driver shows when the session dies.
	other := mustAcquire(t, l, key+".other")
	ox := etcdlock.HeldDriver(l, other)

	var once sync.Once
	closed := make(chan struct{})
	etcdlock.SetBeforeAttach(t, func() {
		once.Do(func() {
			go func() {
				defer close(closed)
				_ = l.Close()
			}()
			select {
			case <-ox.SessionDone():
			case <-time.After(10 * time.Second):
				t.Error("the session did not die within 10 s of Close")
			}
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ls, err := l.Acquire(ctx, key)
	if err == nil {
		t.Fatalf("Acquire returned a lease granted on a closed Locker (Err %v)", ls.Err())
	}
	wantErr(t, err, distlock.ErrClosed)
	t.Logf("Acquire: %v", err)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10 s")
	}
	if es := entries(t, admin, key); len(es) != 0 {
		t.Fatalf("entries of %s after Close: %v, want none", key, es)
	}
}
