// Package keytest is the hostile-key table every backend's
// keys_hostile_test.go runs on its real server (docs/keys.md): each key is
// either a lock of its own, apart from every other key and from another
// tenant's (prefix or namespace) same key, or refused at once with an
// error matching distlock.ErrInvalidArgument that names the limit.
package keytest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// Case is one key of the table.
type Case struct {
	Name, Key string
}

// Common returns the keys every backend is tested with: empty and
// oversized keys, NUL bytes, path syntax, Redis Cluster hash tags, the
// Redis backends' reserved "distlock:" names, invalid UTF-8, keys
// differing only in case or Unicode normalisation, and keys that are a
// prefix of another with a separator and a lease id or sequence after.
func Common() []Case {
	return []Case{
		{"empty", ""},
		{"1 MiB", strings.Repeat("k", 1<<20)},
		{"1 MiB of NUL", strings.Repeat("\x00", 1<<20)},
		{"MaxKeyLen+1", strings.Repeat("k", distlock.MaxKeyLen+1)},
		{"MaxKeyLen", strings.Repeat("m", distlock.MaxKeyLen)},
		{"MaxKeyLen of slashes", strings.Repeat("/", distlock.MaxKeyLen)},
		{"NUL", "\x00"},
		{"NUL inside", "a\x00b"},
		{"NUL after a", "a\x00"},
		{"a", "a"},
		{"b", "b"},
		{"slash", "/"},
		{"dot", "."},
		{"dot dot", ".."},
		{"a/b", "a/b"},
		{"a/../b", "a/../b"},
		{"a/./b", "a/./b"},
		{"trailing slash", "a/"},
		{"double slash", "a//b"},
		{"leading slash", "/a"},
		{"lease id after a", "a/694d7c3e1a2b3c4d"},
		{"sequence after a", "a/0000000001"},
		{"lock node after a", "a/_c_00000000000000000000000000000000-lock-0000000001"},
		{"escaped slash", "a%2Fb"},
		{"percent", "%"},
		{"hash tag {x}", "{x}"},
		{"x, the tag's content", "x"},
		{"open brace", "{"},
		{"close brace", "}"},
		{"empty tag", "{}"},
		{"tag then more", "{x}y"},
		{"reserved prefix", "distlock:"},
		{"fence counter", "distlock:fence"},
		{"wait queue", "distlock:q:a"},
		{"cluster wait queue", "distlock:{abc}:q:a"},
		{"channel", "distlock:w:x"},
		{"reserved word alone", "distlock"},
		{"long, reserved at the end", strings.Repeat("k", 4000) + "distlock:fence"},
		{"non-UTF-8", "\xff\xfe"},
		{"UTF-8 surrogate", "\xed\xa0\x80"},
		{"case Key", "Key"},
		{"case key", "key"},
		{"case KEY", "KEY"},
		{"NFC e-acute", "\u00e9"},
		{"NFD e-acute", "e\u0301"},
		{"space", " "},
		{"newline", "a\nb"},
	}
}

// Backend is what Run needs of one backend.
type Backend struct {
	// A1 and A2 are two Lockers of tenant A (one prefix or namespace), B
	// one of tenant B (another), all on the same server.
	A1, A2, B distlock.Locker
	// Cases is the table: Common plus the backend's own reserved names.
	Cases []Case
	// Refused returns "" for a key the backend accepts, or a text the
	// error refusing it must contain (the limit it names).
	Refused func(key string) string
	// ListKey maps a key of tenant A (b false) or B (b true) to the
	// LockInfo.Key its List entry has; nil for the key itself.
	ListKey func(b bool, key string) string
	// ListsEveryTenant is set where List reports every tenant's locks
	// (Postgres, whose server keeps no names): List is then checked to
	// report both tenants' ids, all distinct.
	ListsEveryTenant bool
	// TokenHolders is set where LockInfo.Holder is
	// distlock.HolderID(lease.Token()); elsewhere holders of different
	// keys held at once are only checked to differ.
	TokenHolders bool
}

// Limit is the rule every backend shares (distlock.CheckKey): the text a
// refusal of key must contain, or "" for a key of 1 to MaxKeyLen bytes.
// A backend with further rules checks them after Limit.
func Limit(key string) string {
	switch {
	case key == "":
		return "empty key"
	case len(key) > distlock.MaxKeyLen:
		return "MaxKeyLen (4096 bytes)"
	}
	return ""
}

// ttl outlives the test: no lease may expire while it runs.
const ttl = 2 * time.Minute

// refusedWithin bounds a refused call: it makes no request.
const refusedWithin = time.Second

// Run runs the table: refused keys fail at once; accepted keys are held
// all at once by tenant A and by tenant B, and each key's Inspect, List,
// Release and ForceRelease reach its own state only.
func Run(t *testing.T, b Backend) {
	var accepted []string
	seen := map[string]string{}
	for _, c := range b.Cases {
		if prev, dup := seen[c.Key]; dup {
			t.Fatalf("cases %q and %q have the same key", prev, c.Name)
		}
		seen[c.Key] = c.Name
		if limit := b.Refused(c.Key); limit != "" {
			t.Run("refused/"+c.Name, func(t *testing.T) { refused(t, b.A1, c.Key, limit) })
		} else {
			accepted = append(accepted, c.Key)
		}
	}
	t.Run("held apart, released in order", func(t *testing.T) { holdApart(t, b, accepted) })
	rev := slices.Clone(accepted)
	slices.Reverse(rev)
	t.Run("held apart, released in reverse", func(t *testing.T) { holdApart(t, b, rev) })
	t.Run("force released one by one", func(t *testing.T) { forceApart(t, b, accepted) })
}

// refused checks that every call on key fails at once with a one-line
// ErrInvalidArgument naming limit.
func refused(t *testing.T, l distlock.Locker, key, limit string) {
	calls := map[string]func(context.Context) error{
		"TryAcquire": func(ctx context.Context) error { _, err := l.TryAcquire(ctx, key); return err },
		"Acquire":    func(ctx context.Context) error { _, err := l.Acquire(ctx, key); return err },
		"Inspect":    func(ctx context.Context) error { _, err := distlock.Inspect(ctx, l, key); return err },
		"ForceRelease": func(ctx context.Context) error {
			_, err := distlock.ForceRelease(ctx, l, key)
			return err
		},
	}
	for name, call := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		err := call(ctx)
		took := time.Since(start)
		cancel()
		msg := fmt.Sprint(err)
		switch {
		case !errors.Is(err, distlock.ErrInvalidArgument):
			t.Errorf("%s of %s: %v, want ErrInvalidArgument", name, short(key), err)
		case took > refusedWithin:
			t.Errorf("%s of %s: refused after %v, want at once", name, short(key), took)
		case strings.Contains(msg, "\n") || len(msg) > 300:
			t.Errorf("%s of %s: error is not one short line: %q", name, short(key), msg)
		case !strings.Contains(msg, limit):
			t.Errorf("%s of %s: error %q does not name the limit %q", name, short(key), msg, limit)
		}
	}
}

// holdApart holds every key on A1 and on B at once, checks what A2 and B
// see, then releases A's leases in order, checking after each that the
// released key is free and every other is still held, by its own holder.
func holdApart(t *testing.T, b Backend, keys []string) {
	ctx := context.Background()
	as, bs := holdAll(t, b.A1, keys), holdAll(t, b.B, keys)
	defer releaseAll(bs)
	defer releaseAll(as)
	for _, k := range keys {
		if ls, err := b.A2.TryAcquire(ctx, k, distlock.WithTTL(ttl)); !errors.Is(err, distlock.ErrNotAcquired) {
			if ls != nil {
				_ = ls.Release(ctx)
			}
			t.Fatalf("A2 TryAcquire %s while A1 holds it: %v, want ErrNotAcquired", short(k), err)
		}
	}
	checkHeld(t, b, b.A2, as)
	checkHeld(t, b, b.B, bs)
	checkListed(t, b, as, bs, true)
	for _, k := range keys {
		if err := as[k].Release(ctx); err != nil {
			t.Fatalf("Release %s: %v: its state was changed by another key's calls", short(k), err)
		}
		delete(as, k)
		if in := inspect(t, b.A2, k); in.Held || in.Waiters != 0 {
			t.Fatalf("after releasing %s, Inspect reports %+v: another key's state is counted as its own", short(k), brief(in))
		}
		if in := inspect(t, b.B, k); !in.Held {
			t.Fatalf("releasing %s in tenant A freed it in tenant B", short(k))
		}
		checkListed(t, b, as, bs, false)
	}
}

// forceApart holds every key on A1 and on B, force-releases A's keys one
// by one through A2, and checks after each that only that key was freed.
func forceApart(t *testing.T, b Backend, keys []string) {
	ctx := context.Background()
	as, bs := holdAll(t, b.A1, keys), holdAll(t, b.B, keys)
	defer releaseAll(bs)
	evicted := map[string]distlock.Lease{}
	defer releaseAll(evicted)
	for _, k := range keys {
		was, err := distlock.ForceRelease(ctx, b.A2, k)
		if err != nil || !was {
			t.Fatalf("ForceRelease %s: %v %v, want true", short(k), was, err)
		}
		evicted[k] = as[k]
		delete(as, k)
		if in := inspect(t, b.A2, k); in.Held {
			t.Fatalf("after ForceRelease %s, Inspect reports it held: %+v", short(k), brief(in))
		}
		checkListed(t, b, as, bs, false)
	}
	for _, k := range keys {
		if err := bs[k].Release(ctx); err != nil {
			t.Fatalf("tenant B's Release %s after tenant A's ForceRelease: %v", short(k), err)
		}
		delete(bs, k)
	}
}

func holdAll(t *testing.T, l distlock.Locker, keys []string) map[string]distlock.Lease {
	t.Helper()
	out := map[string]distlock.Lease{}
	for _, k := range keys {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ls, err := l.TryAcquire(ctx, k, distlock.WithTTL(ttl))
		cancel()
		if err != nil {
			releaseAll(out)
			t.Fatalf("TryAcquire %s while %d other keys are held: %v", short(k), len(out), err)
		}
		out[k] = ls
	}
	return out
}

func releaseAll(ls map[string]distlock.Lease) {
	for _, l := range ls {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = l.Release(ctx)
		cancel()
	}
}

// checkHeld inspects every held key through l: held, under its own key,
// by its own holder.
func checkHeld(t *testing.T, b Backend, l distlock.Locker, held map[string]distlock.Lease) {
	t.Helper()
	holders := map[string]string{}
	for k, ls := range held {
		in := inspect(t, l, k)
		if !in.Held || in.Key != k {
			t.Fatalf("Inspect %s of a held key: %+v", short(k), brief(in))
		}
		if b.TokenHolders && in.Holder != distlock.HolderID(ls.Token()) {
			t.Fatalf("Inspect %s: holder %q, want its lease's %q", short(k), in.Holder, distlock.HolderID(ls.Token()))
		}
		if other, dup := holders[in.Holder]; dup {
			t.Fatalf("keys %s and %s report the same holder %q", short(k), short(other), in.Holder)
		}
		holders[in.Holder] = k
	}
}

// checkListed checks that List reports exactly the held keys of each
// tenant, each once, and (where List reports names and byPrefix is set)
// that a List by each key as prefix reports only keys starting with it, that key among them.
func checkListed(t *testing.T, b Backend, as, bs map[string]distlock.Lease, byPrefix bool) {
	t.Helper()
	name := b.ListKey
	if name == nil {
		name = func(_ bool, k string) string { return k }
	}
	want := func(sets ...map[string]distlock.Lease) map[string]bool {
		out := map[string]bool{}
		for i, set := range sets {
			for k := range set {
				out[name(i == 1, k)] = true
			}
		}
		return out
	}
	if b.ListsEveryTenant {
		w := want(as, bs)
		if len(w) != len(as)+len(bs) {
			t.Fatalf("%d keys of two tenants map to %d list ids", len(as)+len(bs), len(w))
		}
		same(t, "List", listAll(t, b.A2, ""), w)
		return
	}
	same(t, "tenant A's List", listAll(t, b.A2, ""), want(as))
	same(t, "tenant B's List", listAll(t, b.B, ""), want(nil, bs))
	for k := range as {
		if !byPrefix {
			break
		}
		got := listAll(t, b.A2, k)
		if !got[k] {
			t.Fatalf("List with prefix %s misses that key", short(k))
		}
		for g := range got {
			if !strings.HasPrefix(g, k) {
				t.Fatalf("List with prefix %s reports %s", short(k), short(g))
			}
		}
	}
}

func same(t *testing.T, what string, got, want map[string]bool) {
	t.Helper()
	for k := range got {
		if !want[k] {
			t.Fatalf("%s reports %s, which is not held there", what, short(k))
		}
	}
	for k := range want {
		if !got[k] {
			t.Fatalf("%s misses the held key %s", what, short(k))
		}
	}
}

// listAll returns the keys List reports held under prefix, all pages.
func listAll(t *testing.T, l distlock.Locker, prefix string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	page := distlock.Page{Limit: distlock.MaxListLimit}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		lst, err := distlock.List(ctx, l, prefix, page)
		cancel()
		if err != nil {
			t.Fatalf("List %s: %v", short(prefix), err)
		}
		for _, in := range lst.Locks {
			if out[in.Key] {
				t.Fatalf("List %s reports %s twice", short(prefix), short(in.Key))
			}
			if in.Held {
				out[in.Key] = true
			}
		}
		if lst.Next == "" {
			return out
		}
		page.Cursor = lst.Next
	}
}

func inspect(t *testing.T, l distlock.Locker, key string) distlock.LockInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in, err := distlock.Inspect(ctx, l, key)
	if err != nil {
		t.Fatalf("Inspect %s: %v", short(key), err)
	}
	return in
}

// brief is LockInfo without its key, which may be long.
func brief(in distlock.LockInfo) string {
	return fmt.Sprintf("key %s held %v holder %q waiters %d leak %q", short(in.Key), in.Held, in.Holder, in.Waiters, in.Leak)
}

// short quotes a key for a message, cut after 40 bytes.
func short(k string) string {
	if len(k) <= 40 {
		return fmt.Sprintf("%q", k)
	}
	return fmt.Sprintf("%q...(%d bytes)", k[:40], len(k))
}
