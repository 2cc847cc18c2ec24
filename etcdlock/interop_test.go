package etcdlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
)

// testInteropMutex: etcd's concurrency.Mutex (what `etcdctl lock` runs)
// and this Locker exclude each other on the same name, both ways, and a
// waiter of either kind is woken by the other's release.
func (c *cluster) testInteropMutex(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli := c.Client(t, "mutex")
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for _, prefix := range []string{"", "locks/"} {
		l := c.locker(t, "ours", &etcdlock.Options{Prefix: prefix})
		key := uniqueKey(t)
		m := concurrency.NewMutex(sess, prefix+key)

		// Mutex holds: we are refused, then queue behind it.
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		_, err := l.TryAcquire(ctx, key)
		wantErr(t, err, distlock.ErrNotAcquired)
		got := make(chan distlock.Lease, 1)
		go func() {
			ls, err := l.Acquire(ctx, key)
			if err != nil {
				t.Error(err)
			}
			got <- ls
		}()
		time.Sleep(200 * time.Millisecond)
		select {
		case <-got:
			t.Fatal("acquired while a concurrency.Mutex holds the name")
		default:
		}
		released := time.Now()
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		ls := <-got
		if ls == nil {
			t.FailNow()
		}
		t.Logf("prefix %q: Mutex -> ours hand-off %v", prefix, time.Since(released).Round(time.Microsecond))

		// We hold: the Mutex is refused, then queues behind us.
		if err := m.TryLock(ctx); !errors.Is(err, concurrency.ErrLocked) {
			t.Fatalf("Mutex.TryLock while we hold: %v", err)
		}
		locked := make(chan error, 1)
		go func() { locked <- m.Lock(ctx) }()
		time.Sleep(200 * time.Millisecond)
		select {
		case err := <-locked:
			t.Fatalf("Mutex locked while we hold: %v", err)
		default:
		}
		mustRelease(t, ls)
		if err := <-locked; err != nil {
			t.Fatal(err)
		}
		if uint64(m.Header().Revision) <= ls.Fence() {
			t.Fatalf("Mutex's revision %d not after our fence %d", m.Header().Revision, ls.Fence())
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
