package etcdlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
)

// testClosed: Close wakes waiters (their entries go), reports held leases
// lost, and refuses later calls.
func (c *cluster) testClosed(t *testing.T) {
	t.Parallel()
	a := c.locker(t, "a", nil)
	b, err := etcdlock.New(c.Client(t, "b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	admin := c.admin(t)
	key := uniqueKey(t)
	other := uniqueKey(t)
	ls := mustAcquire(t, a, key)
	held := mustAcquire(t, b, other)
	errc := make(chan error, 1)
	go func() {
		_, err := b.Acquire(context.Background(), key)
		errc <- err
	}()
	eventually(t, 10*time.Second, "waiter queued", func() bool { return len(entries(t, admin, key)) == 2 })
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, <-errc, distlock.ErrClosed)
	select {
	case <-held.Done():
		wantErr(t, held.Err(), distlock.ErrLeaseLost)
	default:
		t.Fatal("a lease held at Close is not reported lost")
	}
	if e := entries(t, admin, key); len(e) != 1 {
		t.Fatalf("entries after Close: %v", e)
	}
	_, err = b.TryAcquire(context.Background(), key)
	wantErr(t, err, distlock.ErrClosed)
	_, err = b.Acquire(context.Background(), key)
	wantErr(t, err, distlock.ErrClosed)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	mustRelease(t, ls)
}

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
