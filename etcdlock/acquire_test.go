package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
	"github.com/distlock/distlock/internal/locktest"
)

// TestEtcdLock runs every healthy-cluster scenario on one 3-member
// cluster, in parallel, then the faults one at a time.
func TestEtcdLock(t *testing.T) {
	c := startCluster(t)
	t.Run("Healthy", func(t *testing.T) {
		t.Run("AcquireReleaseContention", c.testAcquireReleaseContention)
		t.Run("FIFOHandOff", c.testFIFOHandOff)
		t.Run("SharedLease", c.testSharedLease)
		t.Run("SameKeyTwiceOneLocker", c.testSameKeyTwice)
		t.Run("IndependentExpiry", c.testIndependentExpiry)
		t.Run("CancelledWaiterLeavesNoEntry", c.testCancelledWaiter)
		t.Run("WaiterBehindALeavingWaiter", c.testWaiterBehindALeavingWaiter)
		t.Run("ExtendAfterExpiry", c.testExtendAfterExpiry)
		t.Run("Watchdog", c.testWatchdog)
		t.Run("TxnIfHeld", c.testTxnIfHeld)
		t.Run("RevokedLeaseLost", c.testRevokedLeaseLost)
		t.Run("Closed", c.testClosed)
		t.Run("BadInput", c.testBadInput)
		t.Run("InteropMutex", c.testInteropMutex)
	})
	t.Run("Faults", func(t *testing.T) {
		t.Run("WaiterCutOff", c.testWaiterCutOff)
		t.Run("HolderCutOff", c.testHolderCutOff)
		for _, leader := range []bool{true, false} {
			name := "Follower"
			if leader {
				name = "Leader"
			}
			t.Run(name+"KilledWhileHeld", func(t *testing.T) { c.testKilledWhileHeld(t, leader) })
			t.Run(name+"KilledWhileWaiting", func(t *testing.T) { c.testKilledWhileWaiting(t, leader) })
		}
		t.Run("MajorityKilled", c.testMajorityKilled)
	})
}

// testAcquireReleaseContention: a lock is one entry in concurrency.Mutex's
// layout (key/<lease ID in hex>, valued the token, created at the fence)
// with a validity just under the default TTL minus drift; another Locker's
// TryAcquire is refused and leaves no entry; Release deletes the entry, a
// second Release returns nil, and the next holder's fence is higher.
func (c *cluster) testAcquireReleaseContention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := c.locker(t, "a", nil), c.locker(t, "b", nil)
	admin := c.admin(t)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key)
	if ls.Key() != key || len(ls.Token()) < 32 || ls.Fence() == 0 {
		t.Fatalf("lease key %q token %q fence %d", ls.Key(), ls.Token(), ls.Fence())
	}
	// concurrency.Mutex's layout: <prefix><key>/<lease ID in hex>, valued the token.
	resp, err := admin.Get(ctx, key+"/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("entries under %s/: %v %v", key, resp, err)
	}
	kv := resp.Kvs[0]
	if want := fmt.Sprintf("%s/%x", key, kv.Lease); string(kv.Key) != want || string(kv.Value) != ls.Token() {
		t.Fatalf("entry %q = %q, want %q = the token", kv.Key, kv.Value, want)
	}
	if uint64(kv.CreateRevision) != ls.Fence() {
		t.Fatalf("fence %d, entry created at %d", ls.Fence(), kv.CreateRevision)
	}
	// 30 s default TTL, drift 30 s x 0.01 + 2 ms.
	if left := time.Until(ls.ValidUntil()); left <= 29*time.Second || left > 30*time.Second-300*time.Millisecond {
		t.Fatalf("validity %v, want just under 30s - 302ms", left)
	}
	_, err = b.TryAcquire(ctx, key)
	wantErr(t, err, distlock.ErrNotAcquired)
	notErr(t, err, distlock.ErrUnavailable)
	if n := len(entries(t, admin, key)); n != 1 {
		t.Fatalf("a failed TryAcquire left %d entries, want 1 (the holder's)", n)
	}
	locktest.ReleaseTwice(t, ls)
	if e := entries(t, admin, key); len(e) != 0 {
		t.Fatalf("entries left after release: %v", e)
	}
	ls2, err := b.TryAcquire(ctx, key)
	if err != nil {
		t.Fatalf("TryAcquire after release: %v", err)
	}
	if ls2.Fence() <= ls.Fence() {
		t.Fatalf("fence %d after %d", ls2.Fence(), ls.Fence())
	}
	mustRelease(t, ls2)
}

// testSharedLease: locks of one TTL share one etcd lease; another TTL uses
// another; releasing all of them revokes the leases after a TTL.
func (c *cluster) testSharedLease(t *testing.T) {
	t.Parallel()
	l := c.locker(t, "shared", nil)
	admin := c.admin(t)
	k1, k2, k3 := uniqueKey(t), uniqueKey(t), uniqueKey(t)
	ttl := 2 * time.Second
	l1 := mustAcquire(t, l, k1, distlock.WithTTL(ttl))
	l2 := mustAcquire(t, l, k2, distlock.WithTTL(ttl))
	l3 := mustAcquire(t, l, k3, distlock.WithTTL(3*time.Second))
	if a, b := leaseOf(t, admin, k1), leaseOf(t, admin, k2); a != b {
		t.Fatalf("two locks of one TTL on leases %x and %x, want one", a, b)
	}
	other := leaseOf(t, admin, k3)
	if other == leaseOf(t, admin, k1) {
		t.Fatal("locks of different TTLs share a lease")
	}
	mustRelease(t, l1)
	mustRelease(t, l2)
	mustRelease(t, l3)
	// Unused: revoked after one TTL.
	eventually(t, 10*time.Second, "unused lease revoked", func() bool {
		r, err := admin.TimeToLive(context.Background(), clientv3.LeaseID(other))
		return err == nil && r.TTL == -1
	})
}

// leaseOf returns the etcd lease of the entry under key (the only one).
func leaseOf(t *testing.T, cli *clientv3.Client, key string) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), key+"/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("entries of %s: %v %v", key, resp, err)
	}
	return resp.Kvs[0].Lease
}

// testSameKeyTwice: two acquisitions of one key through one Locker use two
// leases (two entries) and exclude each other.
func (c *cluster) testSameKeyTwice(t *testing.T) {
	t.Parallel()
	l := c.locker(t, "twice", nil)
	key := uniqueKey(t)
	first := mustAcquire(t, l, key)
	_, err := l.TryAcquire(context.Background(), key)
	wantErr(t, err, distlock.ErrNotAcquired)
	got := make(chan distlock.Lease, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ls, err := l.Acquire(ctx, key)
		if err != nil {
			t.Error(err)
		}
		got <- ls
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case <-got:
		t.Fatal("second acquisition through the same Locker did not wait")
	default:
	}
	mustRelease(t, first)
	second := <-got
	if second == nil {
		t.FailNow()
	}
	if second.Fence() <= first.Fence() {
		t.Fatalf("fence %d after %d", second.Fence(), first.Fence())
	}
	mustRelease(t, second)
}

// testBadInput: an empty key, an invalid option and invalid New arguments
// return errors matching distlock.ErrInvalidArgument; a call with an ended
// context returns distlock.ErrNotAcquired and its error; Guarantees names
// the backend.
func (c *cluster) testBadInput(t *testing.T) {
	t.Parallel()
	a := c.locker(t, "a", nil)
	ctx := context.Background()
	_, err := a.Acquire(ctx, "")
	wantErr(t, err, distlock.ErrInvalidArgument)
	_, err = a.TryAcquire(ctx, "k", distlock.WithTTL(0))
	wantErr(t, err, distlock.ErrInvalidArgument)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = a.Acquire(cctx, uniqueKey(t))
	wantErr(t, err, distlock.ErrNotAcquired, context.Canceled)
	_, err = a.TryAcquire(cctx, uniqueKey(t))
	wantErr(t, err, distlock.ErrNotAcquired, context.Canceled)
	_, err = etcdlock.New(nil, nil)
	wantErr(t, err, distlock.ErrInvalidArgument)
	_, err = etcdlock.New(c.Client(t, "a"), &etcdlock.Options{RequestTimeout: -1})
	wantErr(t, err, distlock.ErrInvalidArgument)
	if !strings.Contains(fmt.Sprint(a.Guarantees()), "etcd") {
		t.Fatal("Guarantees does not name the backend")
	}
}

// testTxnIfHeld: a guarded write applies while held and not after the
// lock passed to someone else.
func (c *cluster) testTxnIfHeld(t *testing.T) {
	t.Parallel()
	a, b := c.locker(t, "a", nil), c.locker(t, "b", nil)
	admin := c.admin(t)
	key := uniqueKey(t)
	data := "data/" + key
	ls := mustAcquire(t, a, key, distlock.WithTTL(2*time.Second))
	if _, err := a.TxnIfHeld(context.Background(), ls, clientv3.OpPut(data, "a")); err != nil {
		t.Fatalf("guarded write while held: %v", err)
	}
	<-ls.Done() // expires; b takes over
	lb := mustAcquire(t, b, key)
	_, err := a.TxnIfHeld(context.Background(), ls, clientv3.OpPut(data, "stale"))
	wantErr(t, err, distlock.ErrLeaseLost)
	resp, err := admin.Get(context.Background(), data)
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "a" {
		t.Fatalf("data %v %v, want the holder's write only", resp, err)
	}
	if _, err := b.TxnIfHeld(context.Background(), lb, clientv3.OpPut(data, "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.HeldCmp(lb); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("HeldCmp of another Locker's lease: %v", err)
	}
	mustRelease(t, lb)
	_, err = b.HeldCmp(lb)
	wantErr(t, err, distlock.ErrReleased)
}

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
