package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
)

// TestNestedKeys: the lock of "p" lives under "p/" and that of "p/42"
// under "p/42/", inside it. They are two locks all the same: holding one
// never blocks the other, in either order, through TryAcquire or a
// waiting Acquire, while each still excludes its own other acquirers and
// a concurrency.Mutex of its own name.
func TestNestedKeys(t *testing.T) {
	c := startMember(t)
	n := &nested{c: c, a: c.locker(t, "a", nil), b: c.locker(t, "b", nil), admin: c.admin(t)}
	t.Run("ChildHeldThenParent", n.childHeldThenParent)
	t.Run("ParentHeldThenChild", n.parentHeldThenChild)
	t.Run("ParentWaiterIgnoresChild", n.parentWaiterIgnoresChild)
	t.Run("QueueReadSkipsLongerKeys", n.queueReadSkipsLongerKeys)
	t.Run("MutexInterop", n.mutexInterop)
}

// nested is the fixture of TestNestedKeys: two Lockers (a, b) on one
// member, and an admin client.
type nested struct {
	c     *cluster
	a, b  *etcdlock.Locker
	admin *clientv3.Client
}

// heldBy checks that ls holds key: other's TryAcquire of key is refused as
// not acquired, and the lease has not ended.
func heldBy(t *testing.T, other *etcdlock.Locker, key string, ls distlock.Lease) {
	t.Helper()
	if _, err := other.TryAcquire(context.Background(), key); !errors.Is(err, distlock.ErrNotAcquired) || errors.Is(err, distlock.ErrUnavailable) {
		t.Fatalf("TryAcquire %q while it is held: %v, want not acquired", key, err)
	}
	if err := ls.Err(); err != nil {
		t.Fatalf("the lease of %q ended: %v", key, err)
	}
}

// tryAcquire is l.TryAcquire(key), which must succeed (why says when).
func tryAcquire(t *testing.T, l *etcdlock.Locker, key, why string) distlock.Lease {
	t.Helper()
	ls, err := l.TryAcquire(context.Background(), key)
	if err != nil {
		t.Fatalf("TryAcquire %q %s: %v", key, why, err)
	}
	return ls
}

// childHeldThenParent: with p/42 held, TryAcquire of p succeeds, each
// still excludes other acquirers, and a refused TryAcquire leaves no
// entry.
func (n *nested) childHeldThenParent(t *testing.T) {
	parent := uniqueKey(t)
	child := parent + "/42"
	lc := tryAcquire(t, n.a, child, "")
	lp := tryAcquire(t, n.b, parent, "while its child "+child+" is held")
	heldBy(t, n.a, parent, lp)
	heldBy(t, n.b, child, lc)
	if got := entries(t, n.admin, parent); len(got) != 2 {
		t.Fatalf("keys under %s/ after a refused TryAcquire: %v, want the two holders' entries", parent, got)
	}
	mustRelease(t, lp)
	mustRelease(t, lc)
}

// parentHeldThenChild: with p held, TryAcquire of p/42 succeeds, and
// each still excludes other acquirers.
func (n *nested) parentHeldThenChild(t *testing.T) {
	parent := uniqueKey(t)
	child := parent + "/42"
	lp := tryAcquire(t, n.a, parent, "")
	lc := tryAcquire(t, n.b, child, "while its parent "+parent+" is held")
	heldBy(t, n.b, parent, lp)
	heldBy(t, n.a, child, lc)
	mustRelease(t, lc)
	mustRelease(t, lp)
}

// parentWaiterIgnoresChild: under "p/", p's holder, then a holder of
// p/42, then p's waiter. The waiter is next in p's queue, and must get p
// as soon as p's holder releases, though p/42 stays held.
func (n *nested) parentWaiterIgnoresChild(t *testing.T) {
	parent := uniqueKey(t)
	lp := mustAcquire(t, n.a, parent)
	lc := mustAcquire(t, n.b, parent+"/42")
	w := n.c.locker(t, "w", nil)
	got := acquireAsync(w, parent)
	select {
	case r := <-got:
		t.Fatalf("the waiter returned while %q is held: %v", parent, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	mustRelease(t, lp)
	wantGranted(t, got, fmt.Sprintf("of %q after its holder released, while %s/42 is held", parent, parent))
	mustRelease(t, lc)
}

// queueReadSkipsLongerKeys: with hand-written keys under p/ (the entry a,
// a key of p/x's lock, then the waiter's entry b), the entry ahead of b is
// a, and none once a is gone, though p/x's key stays.
func (n *nested) queueReadSkipsLongerKeys(t *testing.T) {
	ctx := context.Background()
	pfx := n.a.Prefix(uniqueKey(t))
	key := strings.TrimSuffix(pfx, "/")
	if _, err := n.admin.Put(ctx, pfx+"a", "ahead"); err != nil {
		t.Fatal(err)
	}
	if _, err := n.admin.Put(ctx, pfx+"x/1", "longer key"); err != nil {
		t.Fatal(err)
	}
	put, err := n.admin.Put(ctx, pfx+"b", "mine")
	if err != nil {
		t.Fatal(err)
	}
	rev := put.Header.Revision
	if _, mine, ahead, err := n.a.QueueRead(ctx, key, pfx+"b", rev, 0); err != nil || !mine || ahead != 1 {
		t.Fatalf("mine %v, ahead %d, err %v; want mine, 1 ahead (%sa)", mine, ahead, err, pfx)
	}
	del, err := n.admin.Delete(ctx, pfx+"a")
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []int64{0, del.Header.Revision} {
		if _, mine, ahead, err := n.a.QueueRead(ctx, key, pfx+"b", rev, gone); err != nil || !mine || ahead != 0 {
			t.Fatalf("after %sa's deletion (gone %d): mine %v, ahead %d, err %v; want mine, none ahead", pfx, gone, mine, ahead, err)
		}
	}
}

// mutexInterop: a Mutex holds p, then this Locker holds p/42; a waiter of
// this Locker on p gets it when the Mutex unlocks (p/42 still held). On
// one name with a "/" the Mutex and this Locker exclude each other.
func (n *nested) mutexInterop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess, err := concurrency.NewSession(n.c.Client(t, "mutex"), concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	parent := uniqueKey(t)
	m := concurrency.NewMutex(sess, parent)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	lc := tryAcquire(t, n.b, parent+"/42", "while a Mutex holds "+parent)
	_, err = n.a.TryAcquire(ctx, parent)
	wantErr(t, err, distlock.ErrNotAcquired)
	got := acquireAsync(n.a, parent)
	time.Sleep(200 * time.Millisecond)
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	wantGranted(t, got, fmt.Sprintf("of %q after the Mutex unlocked, while %s/42 is held", parent, parent))
	mc := concurrency.NewMutex(sess, parent+"/42")
	if err := mc.TryLock(ctx); !errors.Is(err, concurrency.ErrLocked) {
		t.Fatalf("Mutex.TryLock(%s/42) while this Locker holds it: %v, want ErrLocked", parent, err)
	}
	mustRelease(t, lc)
	if err := mc.TryLock(ctx); err != nil {
		t.Fatalf("Mutex.TryLock(%s/42) after the release: %v", parent, err)
	}
	_, err = n.b.TryAcquire(ctx, parent+"/42")
	wantErr(t, err, distlock.ErrNotAcquired)
	if err := mc.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestHostileKeys calls Acquire and TryAcquire with keys built to collide
// with something: names the Locker uses itself, separators, NUL bytes,
// invalid UTF-8, a held lock's own entry, sizes at and past MaxKeyLen. Each
// key either works as an independent lock (exclusive, and released for the
// next holder) or is refused at once with a one-line error matching
// distlock.ErrInvalidArgument. Either way a lock held on another key
// through the same Locker, on the same etcd lease, stays held, exclusive
// and extendable.
func TestHostileKeys(t *testing.T) {
	c := startMember(t)
	l, other := c.locker(t, "l", nil), c.locker(t, "other", nil)
	admin := c.admin(t)
	base := uniqueKey(t)
	victimKey := base + "/victim"
	victim := mustAcquire(t, l, victimKey)
	entry := etcdlock.HeldDriver(l, victim).Entry()

	cases := []struct {
		name, key string
		refused   bool
	}{
		{name: "stream keeper's name", key: "\x00distlock-stream-keeper"},
		{name: "NUL", key: "\x00"},
		{name: "NUL inside", key: "a\x00b"},
		{name: "invalid UTF-8", key: "\xff\xfe\xfd"},
		{name: "truncated UTF-8", key: "k\xc3"},
		{name: "slash", key: "/"},
		{name: "slashes", key: "//"},
		{name: "parent of the held key", key: base},
		{name: "held key plus slash", key: victimKey + "/"},
		{name: "dot-dot to the held key", key: victimKey + "/../victim"},
		{name: "the held lock's entry", key: entry},
		{name: "a lease ID", key: path.Base(entry)},
		{name: "MaxKeyLen bytes", key: strings.Repeat("k", etcdlock.MaxKeyLen)},
		{name: "MaxKeyLen+1 bytes", key: strings.Repeat("k", etcdlock.MaxKeyLen+1), refused: true},
		{name: "1 MiB", key: strings.Repeat("k", 1<<20), refused: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if tc.refused {
				wantKeyRefused(t, ctx, l, tc.key)
			} else {
				wantKeyWorks(t, ctx, l, other, tc.key)
			}
			// The lock on the victim key, on the same etcd lease, is
			// untouched.
			untouched(t, ctx, admin, other, victimKey, entry, victim)
		})
	}
	mustRelease(t, victim)

	// The prefix counts apart: MaxKeyLen bytes of it, with a key of
	// MaxKeyLen bytes, work; one byte more is refused by New.
	long := strings.Repeat("p", etcdlock.MaxKeyLen)
	pl := c.locker(t, "prefixed", &etcdlock.Options{Prefix: long})
	mustRelease(t, mustAcquire(t, pl, strings.Repeat("k", etcdlock.MaxKeyLen)))
	_, err := etcdlock.New(admin, &etcdlock.Options{Prefix: long + "p"})
	wantRefused(t, "New", err)
}

// wantKeyRefused checks that l's TryAcquire and Acquire refuse key at
// once (within 1 s) as wantRefused says.
func wantKeyRefused(t *testing.T, ctx context.Context, l *etcdlock.Locker, key string) {
	t.Helper()
	_, err := l.TryAcquire(ctx, key)
	wantRefused(t, "TryAcquire", err)
	start := time.Now()
	_, err = l.Acquire(ctx, key)
	wantRefused(t, "Acquire", err)
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Acquire took %v to refuse the key", took)
	}
}

// wantKeyWorks checks that key works as a lock through l's TryAcquire and
// Acquire: the lease names key, other is refused while it is held, and
// other gets it once it is released.
func wantKeyWorks(t *testing.T, ctx context.Context, l, other *etcdlock.Locker, key string) {
	t.Helper()
	for _, acquire := range []func(context.Context, string, ...distlock.Option) (distlock.Lease, error){l.TryAcquire, l.Acquire} {
		ls, err := acquire(ctx, key)
		if err != nil {
			t.Fatalf("acquire %q: %v", key, err)
		}
		if ls.Key() != key {
			t.Fatalf("lease of key %q for %q", ls.Key(), key)
		}
		if _, err := other.TryAcquire(ctx, key); !errors.Is(err, distlock.ErrNotAcquired) || errors.Is(err, distlock.ErrUnavailable) {
			t.Fatalf("another Locker's TryAcquire of %q while held: %v, want not acquired", key, err)
		}
		mustRelease(t, ls)
		mustRelease(t, mustAcquire(t, other, key))
	}
}

// untouched checks that the lock victim on victimKey is held, exclusive
// (other is refused), its entry alone under its prefix, and extendable.
func untouched(t *testing.T, ctx context.Context, admin *clientv3.Client, other *etcdlock.Locker, victimKey, entry string, victim distlock.Lease) {
	t.Helper()
	if err := victim.Err(); err != nil {
		t.Fatalf("the lock on %s ended: %v", victimKey, err)
	}
	if _, err := other.TryAcquire(ctx, victimKey); !errors.Is(err, distlock.ErrNotAcquired) || errors.Is(err, distlock.ErrUnavailable) {
		t.Fatalf("TryAcquire of the held %s: %v, want not acquired", victimKey, err)
	}
	if got := entries(t, admin, victimKey); !slices.Equal(got, []string{entry}) {
		t.Fatalf("keys under %s/: %q, want its holder's entry %q only", victimKey, got, entry)
	}
	if err := victim.Extend(ctx, distlock.DefaultTTL); err != nil {
		t.Fatalf("Extend of the lock on %s: %v", victimKey, err)
	}
}

// wantRefused checks that err refuses a bad key: it matches
// distlock.ErrInvalidArgument and not distlock.ErrUnavailable, and is one
// short line (a long key is not echoed).
func wantRefused(t *testing.T, op string, err error) {
	t.Helper()
	if !errors.Is(err, distlock.ErrInvalidArgument) || errors.Is(err, distlock.ErrUnavailable) {
		t.Fatalf("%s: %.300v, want an error matching ErrInvalidArgument only", op, err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || len(msg) > 200 {
		t.Fatalf("%s: error of %d bytes, or not one line: %.300q", op, len(msg), msg)
	}
}
