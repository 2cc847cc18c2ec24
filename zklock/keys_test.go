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
	unharmed := func(after string) {
		t.Helper()
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

	var leases []distlock.Lease
	defer func() {
		for _, ls := range leases {
			_ = ls.Release(context.Background())
		}
	}()
	ctx := context.Background()
	for _, h := range hostileKeys {
		ls, err := a.TryAcquire(ctx, h.key, distlock.WithTTL(ttl))
		switch {
		case h.ok && err != nil:
			t.Errorf("%s: TryAcquire: %v", h.name, err)
		case h.ok:
			leases = append(leases, ls)
			p := a.Path(h.key)
			if rest := strings.TrimPrefix(p, zklock.DefaultPrefix+"/"); strings.Contains(rest, "/") || rest == p {
				t.Errorf("%s: lock path %.80q is not one component under %s", h.name, p, zklock.DefaultPrefix)
			}
			if _, err := e.admin.Sync(p); err != nil {
				t.Fatalf("%s: sync: %v", h.name, err)
			}
			if !e.exists(t, p) {
				t.Errorf("%s: lock path %.80q does not exist while held", h.name, p)
			}
			_, err := b.TryAcquire(ctx, h.key, distlock.WithTTL(ttl))
			if !errors.Is(err, distlock.ErrNotAcquired) {
				t.Errorf("%s: a second client's TryAcquire while held: %v, want ErrNotAcquired", h.name, err)
			}
		default:
			if ls != nil {
				mustRelease(t, ls)
			}
			checkRefused(t, h.name+": TryAcquire", err)
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			ls, err = a.Acquire(actx, h.key, distlock.WithTTL(ttl))
			cancel()
			if ls != nil {
				mustRelease(t, ls)
			}
			checkRefused(t, h.name+": Acquire", err)
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
