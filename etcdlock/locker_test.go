package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
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
	mustRelease(t, ls)
	wantErr(t, ls.Err(), distlock.ErrReleased)
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("second Release: %v", err)
	}
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

// testFIFOHandOff queues 6 waiters one after the other: they must be
// served in arrival order, each within a few ms of the previous release.
func (c *cluster) testFIFOHandOff(t *testing.T) {
	t.Parallel()
	key := uniqueKey(t)
	holder := c.locker(t, "h", nil)
	admin := c.admin(t)
	first := mustAcquire(t, holder, key)
	const n = 6
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		l := c.locker(t, fmt.Sprint("w", i), nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ls, err := l.Acquire(ctx, key)
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			errs <- ls.Release(ctx)
		}()
		// Arrival order: wait until this waiter's entry is queued.
		eventually(t, 10*time.Second, "waiter queued", func() bool { return len(entries(t, admin, key)) == i+2 })
	}
	mustRelease(t, first)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range order {
		if w != i {
			t.Fatalf("served in order %v, want arrival order", order)
		}
	}
	if e := entries(t, admin, key); len(e) != 0 {
		t.Fatalf("entries left: %v", e)
	}
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

// testIndependentExpiry: two locks share a lease; the one that is not
// extended expires on its own (Done, entry deleted), the other stays.
func (c *cluster) testIndependentExpiry(t *testing.T) {
	t.Parallel()
	l := c.locker(t, "indep", nil)
	admin := c.admin(t)
	ttl := 2 * time.Second
	kx, ks := uniqueKey(t), uniqueKey(t)
	kept := mustAcquire(t, l, kx, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Minute))
	short := mustAcquire(t, l, ks, distlock.WithTTL(ttl))
	select {
	case <-short.Done():
	case <-time.After(3 * ttl):
		t.Fatal("the lock without extension never expired")
	}
	wantErr(t, short.Err(), distlock.ErrLeaseLost)
	eventually(t, 5*time.Second, "expired lock's entry deleted", func() bool { return len(entries(t, admin, ks)) == 0 })
	if err := kept.Err(); err != nil {
		t.Fatalf("the extended lock on the same lease was lost: %v", err)
	}
	if len(entries(t, admin, kx)) != 1 {
		t.Fatal("the extended lock's entry is gone")
	}
	wantErr(t, short.Release(context.Background()), distlock.ErrLeaseLost)
	mustRelease(t, kept)
}

// testCancelledWaiter: a waiter whose ctx ends returns both sentinels and
// leaves no entry behind.
func (c *cluster) testCancelledWaiter(t *testing.T) {
	t.Parallel()
	a, b := c.locker(t, "a", nil), c.locker(t, "b", nil)
	admin := c.admin(t)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := b.Acquire(ctx, key)
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
	if e := entries(t, admin, key); len(e) != 1 {
		t.Fatalf("entries after the cancelled wait: %v, want the holder's only", e)
	}
	mustRelease(t, ls)
}

// testWaiterBehindALeavingWaiter: c waits behind b, who waits behind the
// holder a. When b gives up, c's watch sees its predecessor deleted, but
// a still holds: c must read the queue and wait on, not take the deletion
// for a release (whether its member or the leader serves that read).
func (c *cluster) testWaiterBehindALeavingWaiter(t *testing.T) {
	t.Parallel()
	a, b, w := c.locker(t, "a", nil), c.locker(t, "b", nil), c.locker(t, "c", nil)
	admin := c.admin(t)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key)
	bctx, bcancel := context.WithCancel(context.Background())
	bdone := make(chan error, 1)
	go func() {
		_, err := b.Acquire(bctx, key)
		bdone <- err
	}()
	waitEntries(t, admin, key, 2)
	type result struct {
		ls  distlock.Lease
		err error
	}
	got := make(chan result, 1)
	go func() { // returns at the latest when w closes, at the test's end
		ls, err := w.Acquire(context.Background(), key)
		got <- result{ls, err}
	}()
	waitEntries(t, admin, key, 3)
	bcancel()
	wantErr(t, <-bdone, distlock.ErrNotAcquired, context.Canceled)
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("c's Acquire failed while a holds: %v", r.err)
		}
		t.Fatalf("c was granted (fence %d) while a still holds (fence %d)", r.ls.Fence(), ls.Fence())
	case <-time.After(500 * time.Millisecond):
	}
	if e := entries(t, admin, key); len(e) != 2 {
		t.Fatalf("entries after b left: %v, want a's and c's", e)
	}
	mustRelease(t, ls)
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("c's Acquire after a's release: %v", r.err)
		}
		if r.ls.Fence() <= ls.Fence() {
			t.Fatalf("c's fence %d, not above a's %d", r.ls.Fence(), ls.Fence())
		}
		mustRelease(t, r.ls)
	case <-time.After(10 * time.Second):
		t.Fatal("c was not granted after a's release")
	}
}

// waitEntries waits until key has n entries.
func waitEntries(t *testing.T, admin *clientv3.Client, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(entries(t, admin, key)) != n {
		if time.Now().After(deadline) {
			t.Fatalf("entries of %q: %v, want %d", key, entries(t, admin, key), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *cluster) testExtendAfterExpiry(t *testing.T) {
	t.Parallel()
	a, b := c.locker(t, "a", nil), c.locker(t, "b", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key, distlock.WithTTL(2*time.Second))
	<-ls.Done()
	wantErr(t, ls.Err(), distlock.ErrLeaseLost)
	ls2 := mustAcquire(t, b, key)
	wantErr(t, ls.Extend(context.Background(), time.Minute), distlock.ErrLeaseLost)
	if _, err := a.TryAcquire(context.Background(), key); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire while b holds: %v", err)
	}
	mustRelease(t, ls2)
}

func (c *cluster) testWatchdog(t *testing.T) {
	t.Parallel()
	a, b := c.locker(t, "a", nil), c.locker(t, "b", nil)
	key := uniqueKey(t)
	ttl := 2 * time.Second
	ls := mustAcquire(t, a, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Minute))
	deadline := time.Now().Add(3 * ttl)
	for time.Now().Before(deadline) {
		if _, err := b.TryAcquire(context.Background(), key); !errors.Is(err, distlock.ErrNotAcquired) {
			t.Fatalf("TryAcquire while held under auto-extension: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := ls.Err(); err != nil {
		t.Fatalf("lost under auto-extension: %v", err)
	}
	if left := time.Until(ls.ValidUntil()); left < ttl/3 {
		t.Fatalf("validity %v left under auto-extension", left)
	}
	mustRelease(t, ls)
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

// testRevokedLeaseLost: an operator revokes the etcd lease: the lock is
// reported lost at its next renewal, and Release says so.
func (c *cluster) testRevokedLeaseLost(t *testing.T) {
	t.Parallel()
	a := c.locker(t, "revoke", nil)
	admin := c.admin(t)
	key := uniqueKey(t)
	ttl := 2 * time.Second
	ls := mustAcquire(t, a, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Minute))
	if _, err := admin.Revoke(context.Background(), clientv3.LeaseID(leaseOf(t, admin, key))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ls.Done():
	case <-time.After(ttl):
		t.Fatal("not told of the revocation within a TTL")
	}
	wantErr(t, ls.Err(), distlock.ErrLeaseLost)
	wantErr(t, ls.Release(context.Background()), distlock.ErrLeaseLost)
}

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
