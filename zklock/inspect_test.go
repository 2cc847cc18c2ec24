package zklock_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/zklock"
)

// TestInspect runs the Inspector contract and the ZooKeeper-specific
// inspection scenarios on a 3-server ensemble of their own.
func TestInspect(t *testing.T) {
	e := startEnsemble(t)
	t.Run("Contract", func(t *testing.T) {
		a, b, closed := e.locker(t, "a", nil), e.locker(t, "b", nil), e.locker(t, "closed", nil)
		// A node lives as long as its session: no TTL to read. The own
		// node's watch reports its deletion.
		locktest.Inspector(t, a, b, closed, locktest.InspectTraits{
			HolderIsTokenID: true,
			FenceStored:     true,
			Queues:          true,
			StoresLabel:     true,
			MonotonicFence:  true,
			LostWithin:      5 * time.Second,
		})
	})
	t.Run("LabelIsNodeData", e.testLabelIsNodeData)
	t.Run("Leak", e.testInspectLeak)
	t.Run("ForceReleaseWakes", e.testForceReleaseWakes)
	t.Run("ListEscapedKeys", e.testListEscapedKeys)
	t.Run("Bounded", e.testInspectBounded)
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// ownPrefix creates a persistent node of its own for a Locker's
// Options.Prefix, so that a test controls everything under it.
func (e *ensemble) ownPrefix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	p := "/inspect-" + hex.EncodeToString(b)
	if _, err := e.admin.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	return p
}

// testLabelIsNodeData: WithLabel is the lock node's data; without it the
// node has none.
func (e *ensemble) testLabelIsNodeData(t *testing.T) {
	l := e.locker(t, "label", nil)
	key := uniqueKey(t)
	const label = "primary ünïcode"
	ls := mustAcquire(t, l, key, distlock.WithLabel(label))
	nodes := e.lockNodes(t, key)
	data, _, err := e.admin.Get(zklock.DefaultPrefix + "/" + key + "/" + nodes[0])
	if err != nil || string(data) != label {
		t.Fatalf("node data = %q, %v; want the label %q", data, err, label)
	}
	mustRelease(t, ls)
	ls = mustAcquire(t, l, key)
	defer mustRelease(t, ls)
	data, _, err = e.admin.Get(zklock.DefaultPrefix + "/" + key + "/" + e.lockNodes(t, key)[0])
	if err != nil || len(data) != 0 {
		t.Fatalf("node data without a label = %q, %v; want none", data, err)
	}
	if info := locktest.MustInspect(t, l, key); info.Label != "" {
		t.Fatalf("Label without WithLabel = %q", info.Label)
	}
}

// testInspectLeak: a persistent lock node made by hand holds the key for
// ever: Inspect and List report it as a leak without expiry, and
// ForceRelease clears it; one queued behind a real holder is a leak too,
// and ForceRelease deletes it with the holder's node.
func (e *ensemble) testInspectLeak(t *testing.T) {
	prefix := e.ownPrefix(t)
	l := e.locker(t, "leak", &zklock.Options{Prefix: prefix})
	key := uniqueKey(t)
	parent := l.Path(key)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := e.admin.Create(parent, nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	const guid = "0123456789abcdef0123456789abcdef"
	leaked, err := e.admin.Create(parent+"/_c_"+guid+"-lock-", []byte{0xff, 0xfe}, zk.FlagSequence, acl)
	if err != nil {
		t.Fatal(err)
	}
	_, st, err := e.admin.Get(leaked)
	if err != nil {
		t.Fatal(err)
	}
	info := locktest.MustInspect(t, l, key)
	name := leaked[len(parent)+1:]
	if !info.Held || info.TTL != distlock.NoExpiry || info.Holder != distlock.HolderID(guid) ||
		info.Fence != uint64(st.Czxid) || info.Label != "" || !strings.Contains(info.Leak, name) {
		t.Fatalf("persistent lock node reported %+v", info)
	}
	_, err = l.TryAcquire(ctx10(t), key)
	wantErr(t, err, distlock.ErrNotAcquired)
	page, err := distlock.List(ctx10(t), l, key, distlock.Page{})
	if err != nil || len(page.Locks) != 1 || page.Locks[0].Key != key || page.Locks[0].Leak == "" {
		t.Fatalf("List(%q) = %+v, %v; want the leaked key", key, page, err)
	}
	if held, err := distlock.ForceRelease(ctx10(t), l, key); err != nil || !held {
		t.Fatalf("ForceRelease of the leak = %v, %v; want true, nil", held, err)
	}
	if info := locktest.MustInspect(t, l, key); info.Held || info.Leak != "" {
		t.Fatalf("after ForceRelease: %+v", info)
	}

	ls := mustAcquire(t, l, key)
	behind, err := e.admin.Create(parent+"/lock-", nil, zk.FlagSequence, acl)
	if err != nil {
		t.Fatal(err)
	}
	info = locktest.MustInspect(t, l, key)
	if !info.Held || info.Holder != distlock.HolderID(ls.Token()) || info.TTL != 0 || info.Waiters != 1 ||
		!strings.Contains(info.Leak, behind[len(parent)+1:]) {
		t.Fatalf("holder with a persistent node behind it reported %+v", info)
	}
	if held, err := distlock.ForceRelease(ctx10(t), l, key); err != nil || !held {
		t.Fatalf("ForceRelease = %v, %v; want true, nil", held, err)
	}
	select {
	case <-ls.Done():
		wantErr(t, ls.Err(), distlock.ErrLeaseLost, zklock.ErrNodeDeleted)
	case <-time.After(5 * time.Second):
		t.Fatal("the evicted lease's Done did not fire")
	}
	if children, _, err := e.admin.Children(parent); err != nil || len(children) != 0 {
		t.Fatalf("lock nodes left after ForceRelease: %v, %v", children, err)
	}
}

// testForceReleaseWakes: a blocked Acquire is woken by ForceRelease at
// once, by its watch, and takes the key with a higher fence; the evicted
// lease's Release frees nobody.
func (e *ensemble) testForceReleaseWakes(t *testing.T) {
	a, b, op := e.locker(t, "wake-a", nil), e.locker(t, "wake-b", nil), e.locker(t, "op", nil)
	key := uniqueKey(t)
	old := mustAcquire(t, a, key, distlock.WithTTL(30*time.Second))
	type got struct {
		ls  distlock.Lease
		err error
		at  time.Time
	}
	done := make(chan got, 1)
	go func() {
		ls, err := b.Acquire(ctx10(t), key, distlock.WithTTL(10*time.Second))
		done <- got{ls, err, time.Now()}
	}()
	eventually(t, 5*time.Second, "the blocked Acquire is not queued", func() bool {
		return locktest.MustInspect(t, op, key).Waiters == 1
	})
	start := time.Now()
	if held, err := distlock.ForceRelease(ctx10(t), op, key); err != nil || !held {
		t.Fatalf("ForceRelease = %v, %v", held, err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("blocked Acquire after ForceRelease: %v", r.err)
	}
	defer mustRelease(t, r.ls)
	if d := r.at.Sub(start); d > time.Second {
		t.Fatalf("blocked Acquire woke %v after ForceRelease, want a push wake-up", d)
	}
	if r.ls.Fence() <= old.Fence() {
		t.Fatalf("fence %d after ForceRelease, want > %d", r.ls.Fence(), old.Fence())
	}
	select {
	case <-old.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the evicted lease's Done did not fire")
	}
	wantErr(t, old.Release(ctx10(t)), distlock.ErrLeaseLost)
	if info := locktest.MustInspect(t, op, key); info.Holder != distlock.HolderID(r.ls.Token()) || info.Fence != r.ls.Fence() {
		t.Fatalf("after the evicted lease's Release: %+v", info)
	}
}

// testListEscapedKeys: keys that escape to percent-encoded nodes are
// listed as the caller names them, in bytewise order, page by page and by
// prefix; children of the prefix that no key escapes to, and empty
// parents, are not listed.
func (e *ensemble) testListEscapedKeys(t *testing.T) {
	prefix := e.ownPrefix(t)
	l := e.locker(t, "list", &zklock.Options{Prefix: prefix})
	keys := []string{"a/ x", "a/b", "a/c%d", "a/é", "b"}
	leases := map[string]distlock.Lease{}
	for _, k := range keys {
		ls := mustAcquire(t, l, k)
		defer mustRelease(t, ls)
		leases[k] = ls
	}
	acl := zk.WorldACL(zk.PermAll)
	for _, foreign := range []string{"%zz", "a%2fb", "a%2Db"} { // not an escape, lower-case hex, needless escape
		if _, err := e.admin.Create(prefix+"/"+foreign, nil, 0, acl); err != nil {
			t.Fatal(err)
		}
		if _, err := e.admin.Create(prefix+"/"+foreign+"/lock-", nil, zk.FlagSequence, acl); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.admin.Create(l.Path("a/empty"), nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	list := func(p string, page distlock.Page) ([]string, string) {
		t.Helper()
		lst, err := distlock.List(ctx10(t), l, p, page)
		if err != nil {
			t.Fatalf("List(%q, %+v): %v", p, page, err)
		}
		var got []string
		for _, info := range lst.Locks {
			ls := leases[info.Key]
			if ls == nil || !info.Held || info.Holder != distlock.HolderID(ls.Token()) || info.Fence != ls.Fence() || info.Leak != "" {
				t.Fatalf("List(%q) listed %+v", p, info)
			}
			got = append(got, info.Key)
		}
		return got, lst.Next
	}
	if got, next := list("", distlock.Page{}); strings.Join(got, "|") != strings.Join(keys, "|") || next != "" {
		t.Fatalf("List(\"\") = %q, next %q; want %q", got, next, keys)
	}
	var got []string
	page := distlock.Page{Limit: 2}
	for i := 0; ; i++ {
		if i > 3 {
			t.Fatalf("List did not end after %d pages: %q", i, got)
		}
		ks, next := list("a/", page)
		got = append(got, ks...)
		if next == "" {
			break
		}
		page.Cursor = next
	}
	if want := "a/ x|a/b|a/c%d|a/é"; strings.Join(got, "|") != want {
		t.Fatalf("pages of List(\"a/\") = %q, want %q", got, want)
	}
	if got, _ := list("a/c", distlock.Page{}); strings.Join(got, "|") != "a/c%d" {
		t.Fatalf("List(\"a/c\") = %q", got)
	}
	if got, _ := list("a/", distlock.Page{Cursor: "a/b"}); strings.Join(got, "|") != "a/c%d|a/é" {
		t.Fatalf("List(\"a/\") after a/b = %q", got)
	}
}

// testInspectBounded: with every server unreachable, Inspect and
// ForceRelease under context.Background() fail with ErrUnavailable
// within ConnectTimeout plus a session timeout.
func (e *ensemble) testInspectBounded(t *testing.T) {
	const ttl, connect = time.Second, time.Second
	l := e.locker(t, "cut", &zklock.Options{ConnectTimeout: connect, Lock: distlock.Options{TTL: ttl}})
	key := uniqueKey(t)
	locktest.MustInspect(t, l, key) // the session is up
	e.blackhole("cut", false)
	defer e.blackhole("cut", true)
	for name, f := range map[string]func() error{
		"Inspect": func() error { _, err := distlock.Inspect(context.Background(), l, key); return err },
		"ForceRelease": func() error {
			_, err := distlock.ForceRelease(context.Background(), l, key)
			return err
		},
	} {
		start := time.Now()
		err := f()
		wantErr(t, err, distlock.ErrUnavailable)
		t.Logf("%s: %v after %v", name, err, time.Since(start))
		if d := time.Since(start); d > connect+ttl+time.Second {
			t.Fatalf("%s with every server unreachable took %v", name, d)
		}
	}
}
