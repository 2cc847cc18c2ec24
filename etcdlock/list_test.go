package etcdlock_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
)

// The List scenarios of TestInspect (inspect_test.go).

// listOrder: List reports lock names in bytewise order, which differs
// from the order of their entries ("a.b/<lease>" sorts before
// "a/<lease>"), and only names under the prefix.
func (i *inspectFixture) listOrder(t *testing.T) {
	prefix := uniqueKey(t) + "/"
	// Entries: a.b/<lease>, a/0/<lease>, a/<lease> (a lease ID in hex
	// starts with a digit above 0), b/<lease>.
	names := []string{prefix + "a", prefix + "a.b", prefix + "a/0", prefix + "b"}
	for _, k := range append([]string{prefix[:len(prefix)-1]}, names...) {
		ls := mustAcquire(t, i.l, k, distlock.WithTTL(10*time.Second))
		defer mustRelease(t, ls)
	}
	for _, limit := range []int{1, 2, 3, 0} {
		var got []string
		page := distlock.Page{Limit: limit}
		for n := 0; ; n++ {
			if n > len(names) {
				t.Fatalf("limit %d: List did not end: %v", limit, got)
			}
			l, err := distlock.List(ctx10(t), i.l, prefix, page)
			if err != nil {
				t.Fatal(err)
			}
			for _, info := range l.Locks {
				got = append(got, info.Key)
			}
			if l.Next == "" {
				break
			}
			page.Cursor = l.Next
		}
		if strings.Join(got, " ") != strings.Join(names, " ") {
			t.Fatalf("limit %d: List = %q, want %q", limit, got, names)
		}
	}
}

// listPrune: with far more locks than a page holds, List keeps the right
// ones and their whole queues (entries put by hand, two per lock, the
// waiter's name sorting before the holder's).
func (i *inspectFixture) listPrune(t *testing.T) {
	prefix := uniqueKey(t) + "/"
	id := i.grant(t, 30)
	const n = 40
	want := map[string]string{} // lock name -> holder id
	for j := range n {
		k := fmt.Sprintf("%s%02d", prefix, (j*17)%n) // not in key order
		holder := newToken(t)
		i.put(t, i.l.Prefix(k)+"z", holder, id)
		i.put(t, i.l.Prefix(k)+"a", newToken(t), id)
		want[k] = distlock.HolderID(holder)
	}
	var got []string
	page := distlock.Page{Limit: 3}
	for len(got) <= n {
		l, err := distlock.List(ctx10(t), i.l, prefix, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range l.Locks {
			if info.Holder != want[info.Key] || info.Waiters != 1 || info.TTL <= 0 || info.Leak != "" {
				t.Fatalf("listed %+v, want holder %s and 1 waiter", info, want[info.Key])
			}
			got = append(got, info.Key)
		}
		if l.Next == "" {
			break
		}
		page.Cursor = l.Next
	}
	if len(got) != n {
		t.Fatalf("List returned %d locks, want %d: %v", len(got), n, got)
	}
	for j, k := range got {
		if k != fmt.Sprintf("%s%02d", prefix, j) {
			t.Fatalf("List = %v, not in key order", got)
		}
	}
}

// manyKeys: a lock whose prefix holds more keys than one read returns
// (those of a longer key's lock) is read whole, at one revision.
func (i *inspectFixture) manyKeys(t *testing.T) {
	key := uniqueKey(t)
	sub := key + "/sub"
	holder := mustAcquire(t, i.l, key, distlock.WithTTL(10*time.Second))
	defer mustRelease(t, holder)
	id := i.grant(t, 30)
	const n = 1200
	for j := 0; j < n; j += 100 {
		ops := make([]clientv3.Op, 0, 100)
		for k := j; k < j+100; k++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("%s%04d", i.l.Prefix(sub), k), newToken(t), clientv3.WithLease(id)))
		}
		if _, err := i.admin.Txn(ctx10(t)).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	i.put(t, i.l.Prefix(key)+"zz", newToken(t), id) // a waiter of key, after the others
	info := locktest.MustInspect(t, i.l, key)
	if info.Holder != distlock.HolderID(holder.Token()) || info.Waiters != 1 || info.Fence != holder.Fence() {
		t.Fatalf("lock with %d keys of a longer key under it: %+v", n, info)
	}
	if info := locktest.MustInspect(t, i.l, sub); !info.Held || info.Waiters != n-1 {
		t.Fatalf("lock of %d entries: %+v", n, info)
	}
	list, err := distlock.List(ctx10(t), i.l, key, distlock.Page{})
	if err != nil || len(list.Locks) != 2 || list.Locks[0].Key != key || list.Locks[1].Key != sub || list.Locks[1].Waiters != n-1 {
		t.Fatalf("List = %+v, %v", list, err)
	}
}
