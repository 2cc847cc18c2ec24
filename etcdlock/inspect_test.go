package etcdlock_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
	"github.com/distlock/distlock/internal/locktest"
)

// TestInspect runs the Inspector contract and the etcd-specific
// inspection scenarios on one 3-member cluster (LeaseTimeToLive is then
// forwarded by followers to the leader).
func TestInspect(t *testing.T) {
	c := startCluster(t)
	t.Run("Contract", func(t *testing.T) {
		a, b, closed := c.locker(t, "a", nil), c.locker(t, "b", nil), c.locker(t, "closed", nil)
		// The evicted holder does not watch its entry: a lease that is
		// not extended learns of the eviction at its Extend or Release.
		locktest.Inspector(t, a, b, closed, locktest.InspectTraits{
			HolderIsTokenID: true,
			FenceStored:     true,
			TTLBased:        true,
			Queues:          true,
			StoresLabel:     true,
			MonotonicFence:  true,
		})
	})
	i := &inspectFixture{c: c, admin: c.admin(t), l: c.locker(t, "inspect", nil)}
	t.Run("Leak", i.leak)
	t.Run("Mutex", i.mutex)
	t.Run("Labels", i.labels)
	t.Run("LabelAdopted", i.labelAdopted)
	t.Run("ForceReleaseWakes", i.forceReleaseWakes)
	t.Run("ForceReleaseSameLocker", i.forceReleaseSameLocker)
	t.Run("ForceReleaseWatchdog", i.forceReleaseWatchdog)
	t.Run("ListOrder", i.listOrder)
	t.Run("ListPrune", i.listPrune)
	t.Run("ManyKeys", i.manyKeys)
	t.Run("BadInput", i.badInput)
}

// inspectFixture is the cluster of TestInspect, an admin client and a
// Locker that inspects.
type inspectFixture struct {
	c     *cluster
	admin *clientv3.Client
	l     *etcdlock.Locker
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newToken(t *testing.T) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// grant grants an etcd lease of ttl seconds through the admin client.
func (i *inspectFixture) grant(t *testing.T, ttl int64) clientv3.LeaseID {
	t.Helper()
	resp, err := i.admin.Grant(ctx10(t), ttl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.ID
}

// put writes an entry by hand (lease 0: none).
func (i *inspectFixture) put(t *testing.T, key, value string, id clientv3.LeaseID) {
	t.Helper()
	var opts []clientv3.OpOption
	if id != 0 {
		opts = append(opts, clientv3.WithLease(id))
	}
	if _, err := i.admin.Put(ctx10(t), key, value, opts...); err != nil {
		t.Fatal(err)
	}
}

// leak: entries put by hand without an etcd lease, or with a value that
// is not a token, are leaks, listed as such and cleared by ForceRelease.
func (i *inspectFixture) leak(t *testing.T) {
	prefix := uniqueKey(t) + "/"
	noLease, badValue, waiter := prefix+"nolease", prefix+"badvalue", prefix+"waiter"
	token := newToken(t)
	i.put(t, i.l.Prefix(noLease)+"leaked", token, 0)
	id := i.grant(t, 30)
	i.put(t, i.l.Prefix(badValue)+"1", "hello", id)
	held := mustAcquire(t, i.l, waiter, distlock.WithTTL(10*time.Second))
	defer mustRelease(t, held)
	i.put(t, i.l.Prefix(waiter)+"leaked", newToken(t), 0)

	info := locktest.MustInspect(t, i.l, noLease)
	if !info.Held || info.TTL != distlock.NoExpiry || !strings.Contains(info.Leak, "never expires") ||
		info.Holder != distlock.HolderID(token) || info.Waiters != 0 || info.Fence == 0 {
		t.Fatalf("entry without an etcd lease reported %+v", info)
	}
	if strings.Contains(info.Leak, token) {
		t.Fatalf("Leak %q shows the token", info.Leak)
	}
	info = locktest.MustInspect(t, i.l, badValue)
	if !info.Held || info.TTL <= 0 || info.TTL > 30*time.Second || !strings.Contains(info.Leak, "not a distlock token") ||
		info.Holder != fmt.Sprintf("etcd-lease:%x", int64(id)) {
		t.Fatalf("entry with a value that is not a token reported %+v", info)
	}
	info = locktest.MustInspect(t, i.l, waiter)
	if !info.Held || info.Holder != distlock.HolderID(held.Token()) || info.Waiters != 1 || !strings.Contains(info.Leak, "never expires") {
		t.Fatalf("held lock with a leaked waiter reported %+v", info)
	}

	list, err := distlock.List(ctx10(t), i.l, prefix, distlock.Page{})
	if err != nil || len(list.Locks) != 3 || list.Next != "" {
		t.Fatalf("List = %+v, %v; want 3 locks", list, err)
	}
	for _, info := range list.Locks {
		if info.Leak == "" {
			t.Fatalf("List reported %+v without its leak", info)
		}
	}

	for _, k := range []string{noLease, badValue} {
		if ok, err := distlock.ForceRelease(ctx10(t), i.l, k); err != nil || !ok {
			t.Fatalf("ForceRelease(%s) = %v, %v; want true, nil", k, ok, err)
		}
		if info := locktest.MustInspect(t, i.l, k); info.Held || info.Leak != "" {
			t.Fatalf("after ForceRelease %s reported %+v", k, info)
		}
		mustRelease(t, mustAcquire(t, i.l, k))
	}
}

// mutex: a concurrency.Mutex holder (empty value) is no leak; its holder
// is named by its etcd lease and its fence is its create revision.
func (i *inspectFixture) mutex(t *testing.T) {
	key := uniqueKey(t)
	sess, err := concurrency.NewSession(i.c.Client(t, "mutex"), concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	m := concurrency.NewMutex(sess, i.l.Prefix(key)[:len(i.l.Prefix(key))-1])
	if err := m.Lock(ctx10(t)); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(context.Background()) //nolint:errcheck // cleanup
	resp, err := i.admin.Get(ctx10(t), m.Key())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get the Mutex's key: %v", err)
	}
	info := locktest.MustInspect(t, i.l, key)
	if !info.Held || info.Leak != "" || info.Holder != fmt.Sprintf("etcd-lease:%x", int64(sess.Lease())) ||
		info.Fence != uint64(resp.Kvs[0].CreateRevision) || info.TTL <= 0 || info.TTL > 10*time.Second || info.Label != "" {
		t.Fatalf("Mutex holder reported %+v", info)
	}
}

// labels: the label of a lock taken by TryAcquire, and of one granted to a
// queued waiter, are reported; a later holder without one shows none.
func (i *inspectFixture) labels(t *testing.T) {
	key := uniqueKey(t)
	other := i.c.locker(t, "labels", nil)
	first, err := i.l.TryAcquire(ctx10(t), key, distlock.WithLabel("first holder"))
	if err != nil {
		t.Fatal(err)
	}
	if info := locktest.MustInspect(t, other, key); info.Label != "first holder" || info.Holder != distlock.HolderID(first.Token()) {
		t.Fatalf("TryAcquire's label: %+v", info)
	}
	got := acquireAsync(other, key, distlock.WithLabel("waiter"))
	eventually(t, 5*time.Second, "the waiter is not queued", func() bool { return locktest.MustInspect(t, i.l, key).Waiters == 1 })
	mustRelease(t, first)
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if info := locktest.MustInspect(t, i.l, key); info.Label != "waiter" || info.Holder != distlock.HolderID(r.ls.Token()) {
		t.Fatalf("the waiter's label: %+v", info)
	}
	mustRelease(t, r.ls)
	last := mustAcquire(t, i.l, key)
	defer mustRelease(t, last)
	if info := locktest.MustInspect(t, i.l, key); info.Label != "" || !info.Held {
		t.Fatalf("unlabelled holder: %+v", info)
	}
}

// labelAdopted: an acquisition with a label whose first enqueue try is
// applied but its reply lost finds its entry on the next try and takes it
// as its own (the entry's value is its token and label).
func (i *inspectFixture) labelAdopted(t *testing.T) {
	member := i.c.Nodes[0]
	lost, prompt := member.Link("lost"), member.Link("prompt")
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{lost.Addr()}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	l, err := etcdlock.New(cli, &etcdlock.Options{RequestTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	defer lost.Heal()
	key := uniqueKey(t)
	warm := mustAcquire(t, l, key+".warm")   // the session exists
	defer warm.Release(context.Background()) //nolint:errcheck // cleanup
	etcdlock.SetBeforeEnqueueTry(t, func(try int) {
		switch try {
		case 1:
			lost.DropReplies()
		case 2:
			cli.SetEndpoints(prompt.Addr())
		}
	})
	ls := mustAcquire(t, l, key, distlock.WithLabel("adopted"))
	etcdlock.SetBeforeEnqueueTry(t, nil)
	defer mustRelease(t, ls)
	if info := locktest.MustInspect(t, i.l, key); info.Holder != distlock.HolderID(ls.Token()) || info.Label != "adopted" || info.Waiters != 0 {
		t.Fatalf("after an adopted enqueue: %+v", info)
	}
}

// forceReleaseWakes: ForceRelease wakes a waiter of another Locker, which
// gets a higher fence; the evicted lease's Extend and Release fail and
// leave the new holder alone.
func (i *inspectFixture) forceReleaseWakes(t *testing.T) {
	key := uniqueKey(t)
	holder, waiter := i.c.locker(t, "fr-holder", nil), i.c.locker(t, "fr-waiter", nil)
	old := mustAcquire(t, holder, key, distlock.WithTTL(10*time.Second))
	got := acquireAsync(waiter, key, distlock.WithTTL(10*time.Second))
	eventually(t, 5*time.Second, "the waiter is not queued", func() bool { return locktest.MustInspect(t, i.l, key).Waiters == 1 })
	start := time.Now()
	if ok, err := distlock.ForceRelease(ctx10(t), i.l, key); err != nil || !ok {
		t.Fatalf("ForceRelease = %v, %v; want true, nil", ok, err)
	}
	var next distlock.Lease
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("the waiter after ForceRelease: %v", r.err)
		}
		next = r.ls
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter was not woken by ForceRelease")
	}
	t.Logf("waiter granted %v after ForceRelease", time.Since(start))
	if next.Fence() <= old.Fence() {
		t.Fatalf("fence after ForceRelease %d, want > %d", next.Fence(), old.Fence())
	}
	wantErr(t, old.Extend(ctx10(t), 10*time.Second), distlock.ErrLeaseLost, etcdlock.ErrKeyGone)
	wantErr(t, old.Release(ctx10(t)), distlock.ErrLeaseLost)
	if info := locktest.MustInspect(t, i.l, key); info.Holder != distlock.HolderID(next.Token()) || info.Waiters != 0 {
		t.Fatalf("after the evicted lease's Extend and Release: %+v", info)
	}
	mustRelease(t, next)
}

// forceReleaseSameLocker: the holder's own Locker takes the key again
// after a ForceRelease (on another session, the old one still reserving
// the key); the evicted lease's Release does not free the new holder.
func (i *inspectFixture) forceReleaseSameLocker(t *testing.T) {
	key := uniqueKey(t)
	l := i.c.locker(t, "fr-same", nil)
	old := mustAcquire(t, l, key)
	if ok, err := distlock.ForceRelease(ctx10(t), l, key); err != nil || !ok {
		t.Fatalf("ForceRelease = %v, %v", ok, err)
	}
	next := mustAcquire(t, l, key)
	wantErr(t, old.Release(ctx10(t)), distlock.ErrLeaseLost)
	if info := locktest.MustInspect(t, i.l, key); info.Holder != distlock.HolderID(next.Token()) {
		t.Fatalf("the evicted lease's Release freed the new holder: %+v", info)
	}
	if es := entries(t, i.admin, i.l.Prefix(key)[:len(i.l.Prefix(key))-1]); len(es) != 1 {
		t.Fatalf("entries %v, want the new holder's only", es)
	}
	mustRelease(t, next)
}

// forceReleaseWatchdog: an auto-extended lease learns of its eviction at
// its watchdog's next extension (every TTL/3).
func (i *inspectFixture) forceReleaseWatchdog(t *testing.T) {
	key := uniqueKey(t)
	const ttl = 3 * time.Second
	old := mustAcquire(t, i.l, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(0))
	if ok, err := distlock.ForceRelease(ctx10(t), i.l, key); err != nil || !ok {
		t.Fatalf("ForceRelease = %v, %v", ok, err)
	}
	select {
	case <-old.Done():
		wantErr(t, old.Err(), distlock.ErrLeaseLost)
	case <-time.After(ttl):
		t.Fatalf("the auto-extended lease did not learn of its eviction within %v", ttl)
	}
}

// badInput: over-long keys are refused, and every call on an unreachable
// cluster returns within its bound even with context.Background().
func (i *inspectFixture) badInput(t *testing.T) {
	long := strings.Repeat("k", etcdlock.MaxKeyLen+1)
	_, err := distlock.Inspect(ctx10(t), i.l, long)
	wantErr(t, err, distlock.ErrInvalidArgument)
	_, err = distlock.ForceRelease(ctx10(t), i.l, long)
	wantErr(t, err, distlock.ErrInvalidArgument)

	link := i.c.Nodes[0].Link("dead")
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{link.Addr()}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	l, err := etcdlock.New(cli, &etcdlock.Options{RequestTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	link.Blackhole()
	defer link.Heal()
	calls := map[string]func() error{
		"Inspect":      func() error { _, err := l.Inspect(context.Background(), "k"); return err },
		"List":         func() error { _, err := l.List(context.Background(), "", distlock.Page{}); return err },
		"ForceRelease": func() error { _, err := l.ForceRelease(context.Background(), "k"); return err },
	}
	for name, call := range calls {
		start := time.Now()
		err := call()
		wantErr(t, err, distlock.ErrUnavailable)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%s on an unreachable cluster took %v, want about one try (200 ms)", name, d)
		}
	}
}
