package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/zklock"
)

// hostileKeys are keys that look like path syntax, ZooKeeper's reserved
// names or the recipe's own node names, bytes ZooKeeper forbids in paths,
// and keys at and beyond the length limit.
var hostileKeys = []struct {
	name string
	key  string
	ok   bool // a lock of its own; else refused with ErrInvalidArgument
}{
	{"slash", "/", true},
	{"two slashes", "//", true},
	{"leading slash", "/a", true},
	{"trailing slash", "a/", true},
	{"separator", "a/b", true},
	{"escaped separator", "a%2Fb", true},
	{"percent", "%", true},
	{"dot", ".", true},
	{"dot dot", "..", true},
	{"escaped dot", "%2E", true},
	{"dot components", "./..", true},
	{"parent component", "../x", true},
	{"absolute parent", "/..", true},
	{"zookeeper", "zookeeper", true},
	{"zookeeper path", "/zookeeper", true},
	{"zookeeper quota", "/zookeeper/quota", true},
	{"recipe node name", "_c_00000000000000000000000000000000-lock-0000000001", true},
	{"sequence name", "lock-0000000001", true},
	{"space", " ", true},
	{"NUL", "\x00", true},
	{"inner NUL", "a\x00b", true},
	{"escaped NUL", "%00", true},
	{"control characters", "\x01\x1f\x7f", true},
	{"non-UTF-8", "\xff\xfe\xfd", true},
	{"UTF-8 surrogate", "\xed\xa0\x80", true},
	{"unicode ZooKeeper forbids", "\u00a0\ufeff\uffff\ud7ff\ue000", true},
	{"emoji", "\U0001F512", true},
	{"longest key, every byte escaped", strings.Repeat("/", zklock.MaxKeyLen), true},
	{"one byte too long", strings.Repeat("k", zklock.MaxKeyLen+1), false},
	{"1 MiB", strings.Repeat("k", 1<<20), false},
	{"1 MiB of NUL", strings.Repeat("\x00", 1<<20), false},
	{"1 MiB of separators", strings.Repeat("/", 1<<20), false},
}

// testHostileKeys: every hostile key is either a lock of its own, which
// does not collide with the others (all are held at once), or refused with
// a short ErrInvalidArgument; and after each call a lease on another key
// of the same Locker and session stays valid and extendable, on the same
// connection.
func testHostileKeys(t *testing.T, e *ensemble) {
	const ttl = 5 * time.Second // every call below uses the bystander's session
	a, b := e.locker(t, "a", nil), e.locker(t, "b", nil)
	bystander := uniqueKey(t)
	held := mustAcquire(t, a, bystander, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))
	sid, connected := zklock.SessionID(a, ttl)
	if sid == 0 || !connected {
		t.Fatalf("a's session: id %x, connected %v", sid, connected)
	}
	conn := e.connection(t, sid)
	if conn == "" {
		t.Fatalf("no server lists a connection of session %x", sid)
	}
	unharmed := func(after string) { t.Helper(); checkBystander(t, e, a, b, held, sid, conn, after) }

	var leases []distlock.Lease
	defer func() {
		for _, ls := range leases {
			_ = ls.Release(context.Background())
		}
	}()
	for _, h := range hostileKeys {
		if ls := checkHostileKey(t, e, a, b, h.name, h.key, h.ok); ls != nil {
			leases = append(leases, ls)
		}
		unharmed(h.name)
	}
	for _, ls := range leases {
		mustRelease(t, ls)
	}
	leases = nil
	unharmed("the releases")
	mustRelease(t, held)
}

// checkHostileKey tries key on a: a key that is ok must be granted, on a
// path one component under the prefix that exists while held and that b
// cannot take; any other key must be refused, by TryAcquire and by
// Acquire, with a short ErrInvalidArgument. It returns the lease of a
// granted key.
func checkHostileKey(t *testing.T, e *ensemble, a, b *zklock.Locker, name, key string, ok bool) distlock.Lease {
	t.Helper()
	const ttl = 5 * time.Second
	ctx := context.Background()
	ls, err := a.TryAcquire(ctx, key, distlock.WithTTL(ttl))
	switch {
	case ok && err != nil:
		t.Errorf("%s: TryAcquire: %v", name, err)
		return nil
	case ok:
		p := a.Path(key)
		if rest := strings.TrimPrefix(p, zklock.DefaultPrefix+"/"); strings.Contains(rest, "/") || rest == p {
			t.Errorf("%s: lock path %.80q is not one component under %s", name, p, zklock.DefaultPrefix)
		}
		if _, err := e.admin.Sync(p); err != nil {
			t.Fatalf("%s: sync: %v", name, err)
		}
		if !e.exists(t, p) {
			t.Errorf("%s: lock path %.80q does not exist while held", name, p)
		}
		_, err := b.TryAcquire(ctx, key, distlock.WithTTL(ttl))
		if !errors.Is(err, distlock.ErrNotAcquired) {
			t.Errorf("%s: a second client's TryAcquire while held: %v, want ErrNotAcquired", name, err)
		}
	default:
		if ls != nil {
			mustRelease(t, ls)
		}
		checkRefused(t, name+": TryAcquire", err)
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ls, err = a.Acquire(actx, key, distlock.WithTTL(ttl))
		cancel()
		if ls != nil {
			mustRelease(t, ls)
		}
		checkRefused(t, name+": Acquire", err)
		return nil
	}
	return ls
}

// checkBystander fails the test unless the bystander lease held by a is
// still valid and extendable, a's session is still sid on the server
// connection conn, and b is refused the bystander's key.
func checkBystander(t *testing.T, e *ensemble, a, b *zklock.Locker, held distlock.Lease, sid int64, conn, after string) {
	t.Helper()
	const ttl = 5 * time.Second
	bystander := held.Key()
	select {
	case <-held.Done():
		t.Fatalf("after %s: the lease on %q was lost: %v", after, bystander, held.Err())
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := held.Extend(ctx, ttl); err != nil {
		t.Fatalf("after %s: extending the lease on %q: %v", after, bystander, err)
	}
	if now, connected := zklock.SessionID(a, ttl); now != sid || !connected {
		t.Fatalf("after %s: a's session is %x (connected %v), was %x", after, now, connected, sid)
	}
	if now := e.connection(t, sid); now != conn {
		t.Fatalf("after %s: a's connection was replaced: %q, was %q", after, now, conn)
	}
	_, err := b.TryAcquire(ctx, bystander, distlock.WithTTL(ttl))
	wantErr(t, err, distlock.ErrNotAcquired)
}

// checkRefused fails unless err matches ErrInvalidArgument and is one
// short line.
func checkRefused(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Errorf("%s: %.200v, want ErrInvalidArgument", what, err)
		return
	}
	if msg := err.Error(); len(msg) > 200 || strings.Contains(msg, "\n") {
		t.Errorf("%s: the error is not one short line (%d bytes): %.200q", what, len(msg), msg)
	}
}

// connection identifies the server-side connection that carries session
// sid (4lw cons on every server: the server, the client's address and the
// connection's establishment time), "" if none does.
func (e *ensemble) connection(t testing.TB, sid int64) string {
	t.Helper()
	want := fmt.Sprintf("sid=0x%x,", sid)
	for i, n := range e.Nodes {
		out, err := n.FourLetter(context.Background(), "cons")
		if err != nil {
			t.Fatalf("cons: %v", err)
		}
		for _, line := range strings.Split(out, "\n") {
			if !strings.Contains(line, want) {
				continue
			}
			addr, _, _ := strings.Cut(strings.TrimSpace(line), "[")
			est := ""
			if _, after, ok := strings.Cut(line, "est="); ok {
				est, _, _ = strings.Cut(after, ",")
			}
			return fmt.Sprintf("server %d, client %s, established %s", i, addr, est)
		}
	}
	return ""
}

// testURL: a Locker opened by URL takes its options from the query
// (validity min(ttl, safe_fraction x session_timeout)) and its prefix
// from the path, under which the escaped key is the lock's node.
func testURL(t *testing.T, e *ensemble) {
	u := "zk://" + e.ConnectString("url") + "/url-test/locks?ttl=2s&session_timeout=3s&safe_fraction=0.5&tick_time=250ms&connect_timeout=1s&max_sessions=1"
	l, err := distlock.Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	key := "a/b"
	start := time.Now()
	ls, err := l.TryAcquire(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if vu := ls.ValidUntil(); vu.Before(start.Add(1500*time.Millisecond)) || vu.After(time.Now().Add(1500*time.Millisecond)) {
		t.Fatalf("validity %v, want min(2s, 0.5 x 3s) after the listing", vu.Sub(start))
	}
	if !e.exists(t, "/url-test/locks/a%2Fb") {
		t.Fatal("the prefix from the URL path was not used")
	}
	mustRelease(t, ls)
}
