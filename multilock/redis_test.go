package multilock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/multilock"
	"github.com/distlock/distlock/redissingle"
	"github.com/distlock/distlock/testbed"
)

// redisClients starts one real Redis and returns n Lockers on it, each
// with its own client (as n processes would have), closed when t ends.
func redisClients(t *testing.T, n int) []distlock.Locker {
	t.Helper()
	testbed.RequireDocker(t)
	node := testbed.StartRedis(t, 1, testbed.RedisOptions{})[0]
	ls := make([]distlock.Locker, n)
	for i := range ls {
		c := redis.NewClient(&redis.Options{
			Addr:                     node.Addr(),
			DialTimeout:              time.Second,
			DialerRetries:            1,
			ReadTimeout:              2 * time.Second,
			WriteTimeout:             2 * time.Second,
			DisableIdentity:          true, // CLIENT SETINFO needs Redis 7.2
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		})
		l, err := redissingle.New(c, nil)
		if err != nil {
			t.Fatalf("redissingle.New: %v", err)
		}
		t.Cleanup(func() {
			_ = l.Close()
			_ = c.Close()
		})
		ls[i] = l
	}
	return ls
}

// TestRedis runs the all-or-nothing and deadlock-freedom checks on a
// real Redis: a key held by another client fails TryAcquire and leaves
// nothing held; then 4 clients x 25 rounds of blocking Acquire over
// random overlapping sets finish without deadlock or overlap.
func TestRedis(t *testing.T) {
	ls := redisClients(t, 5)
	blocker := locktest.MustAcquire(t, ls[4], "k2")
	ml, err := multilock.TryAcquire(context.Background(), ls[0], []string{"k3", "k0", "k2", "k1"})
	if ml != nil {
		t.Fatal("got a lease with k2 held elsewhere")
	}
	locktest.WantErr(t, err, distlock.ErrNotAcquired)
	wantFree(t, ls[4], "k0", "k1", "k3")
	locktest.MustRelease(t, blocker)

	ml = mustAcquire(t, ls[0], []string{"k3", "k0", "k2", "k1"})
	wantFree(t, ls[4], "k4")
	for _, k := range ml.Keys() {
		if !held(t, ls[4], k) {
			t.Fatalf("key %s not held under the lease", k)
		}
	}
	mustRelease(t, ml)
	wantFree(t, ls[4], pool[:4]...)

	s := newStress(pool, true, ls[0].Guarantees().Fence >= distlock.FenceMonotonic)
	s.run(t, ls[:4], 25, 60*time.Second)
	wantFree(t, ls[4], pool...)
}
