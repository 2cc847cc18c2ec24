package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redlock"
)

// hostileKey is a key a caller passes to a Locker, hoping to break
// another key.
type hostileKey struct {
	name   string // for the log
	l      *redlock.Locker
	prefix string // l's
	key    string
}

// testHostileKeys: a victim key is held by one Locker. Hostile keys are
// then tried on a Locker with the victim's Prefix and on Lockers with
// other Prefixes (whose keys can name the first's internal keys): the
// names of the fence counter, the victim's queue and the channels, keys
// with separators, NUL bytes, invalid UTF-8, and a 1 MiB key. Each must be
// refused with a one-line error matching distlock.ErrInvalidArgument,
// without I/O, or work as a lock of its own (its token on the nodes under
// its own name, kept until the end) without affecting the victim: the
// holder can still extend it, another key of the same Prefix still gets a
// higher fence, and a waiter that queues on the victim afterwards is
// handed it by its release, with a higher fence again.
func (c *cluster) testHostileKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := uniqueKey(t) + ":"
	opts := &redlock.Options{Prefix: prefix}
	a, waiter := c.locker(t, "a", opts), c.locker(t, "b", opts)
	bare := c.locker(t, "c", nil)
	dist := c.locker(t, "d", &redlock.Options{Prefix: prefix + "dist"})
	const victim = "victim"
	queue := prefix + "distlock:q:" + victim
	held := mustAcquire(t, a, victim)
	keys := hostileKeys(prefix, victim, a, bare, dist)
	last := held.Fence()
	kept := map[*hostileKey]distlock.Lease{}
	defer func() {
		for h, ls := range kept {
			if err := ls.Release(ctx); err != nil {
				t.Errorf("%s key: Release: %.300s", h.name, err)
			}
			if hs := c.holders(t, h.prefix+h.key); len(hs) > 0 {
				t.Errorf("%s key: still on nodes %v after its release", h.name, hs)
			}
		}
	}()
	for i := range keys {
		h := &keys[i]
		if ls := c.tryHostileKey(t, h); ls != nil {
			kept[h] = ls
		}
		// The victim is unharmed.
		if err := held.Extend(ctx, 30*time.Second); err != nil {
			t.Fatalf("after the %s key, the victim's Extend: %v", h.name, err)
		}
		other := mustAcquire(t, a, uniqueKey(t))
		if other.Fence() <= last {
			t.Fatalf("after the %s key, fence %d after %d", h.name, other.Fence(), last)
		}
		last = other.Fence()
		mustRelease(t, other)
	}
	c.checkHandedOn(t, waiter, held, victim, queue, last)
}

// hostileKeys lists the keys testHostileKeys tries: a, bare and dist are
// Lockers with Prefix prefix, none and prefix+"dist".
func hostileKeys(prefix, victim string, a, bare, dist *redlock.Locker) []hostileKey {
	queue := prefix + "distlock:q:" + victim
	return []hostileKey{
		{"fence counter", a, prefix, "distlock:fence"},
		{"victim's queue", a, prefix, "distlock:q:" + victim},
		{"queue namespace", a, prefix, "distlock:q:"},
		{"channel namespace", a, prefix, "distlock:w:0"},
		{"reserved namespace", a, prefix, "distlock:"},
		{"reserved inside", a, prefix, "x:distlock:y"},
		{"fence counter, no prefix", bare, "", prefix + "distlock:fence"},
		{"victim's queue, no prefix", bare, "", queue},
		{"reserved across the prefix", dist, prefix + "dist", "lock:q:" + victim},
		{"queue name without namespace", a, prefix, "q:" + victim},
		{"separator", a, prefix, "a|b"},
		{"separator only", a, prefix, "|"},
		{"entry shape", a, prefix, victim + "|1f"},
		{"colon", a, prefix, victim + ":"},
		{"NUL inside", a, prefix, "a\x00b"},
		{"NUL only", a, prefix, "\x00"},
		{"victim and NUL", a, prefix, victim + "\x00"},
		{"invalid UTF-8", a, prefix, "\xff\xfe\xfd"},
		{"newline", a, prefix, "a\r\nb"},
		{"longest", a, prefix, strings.Repeat("k", redlock.MaxKeyLen)},
		{"one byte too long", a, prefix, strings.Repeat("k", redlock.MaxKeyLen+1)},
		{"1 MiB", a, prefix, strings.Repeat("k", 1<<20)},
	}
}

// tryHostileKey tries h's key with TryAcquire: the lease, checked to hold
// the key under its own name, or nil if the key was refused (checked to be
// refused clearly and at once, by Acquire too).
func (c *cluster) tryHostileKey(t *testing.T, h *hostileKey) distlock.Lease {
	t.Helper()
	tctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	ls, err := h.l.TryAcquire(tctx, h.key, distlock.WithTTL(time.Minute))
	if err == nil {
		c.checkOwnLock(t, h, ls)
		return ls
	}
	if checkRefused(t, h, err) {
		_, err = h.l.Acquire(tctx, h.key)
		checkRefused(t, h, err)
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: refused after %v", h.name, d)
		}
	}
	return nil
}

// checkHandedOn checks that a waiter that queues on the victim (held,
// with queue queue) is handed it by its release, with a fence above last.
func (c *cluster) checkHandedOn(t *testing.T, waiter *redlock.Locker, held distlock.Lease, victim, queue string, last uint64) {
	t.Helper()
	ctx := context.Background()
	got := make(chan distlock.Lease, 1)
	errc := make(chan error, 1)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	go func() {
		ls, err := waiter.Acquire(wctx, victim)
		got <- ls
		errc <- err
	}()
	eventually(t, 5*time.Second, "the waiter queued on every node", func() bool {
		for _, n := range c.nodes {
			if n.Admin().ZCard(ctx, queue).Val() == 0 {
				return false
			}
		}
		return true
	})
	mustRelease(t, held)
	ls, err := <-got, <-errc
	if err != nil {
		t.Fatalf("the victim's waiter, once the victim was released: %v", err)
	}
	defer mustRelease(t, ls)
	if ls.Fence() <= last {
		t.Fatalf("the waiter's fence %d after %d", ls.Fence(), last)
	}
}

// checkRefused fails the test unless err refuses h's key clearly; it
// reports whether err matches distlock.ErrInvalidArgument.
func checkRefused(t *testing.T, h *hostileKey, err error) bool {
	t.Helper()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	t.Logf("%s: %.200s", h.name, msg)
	switch {
	case !errors.Is(err, distlock.ErrInvalidArgument):
		t.Errorf("%s key (%d bytes): %.300s, want it to work or to match ErrInvalidArgument", h.name, len(h.key), msg)
	case strings.ContainsAny(msg, "\r\n") || len(msg) > 2*redlock.MaxKeyLen:
		t.Errorf("%s key: the error is not one short line: %.300q (%d bytes)", h.name, msg, len(msg))
	}
	return errors.Is(err, distlock.ErrInvalidArgument)
}

// checkOwnLock checks that ls holds h's key under its own name.
func (c *cluster) checkOwnLock(t *testing.T, h *hostileKey, ls distlock.Lease) {
	t.Helper()
	t.Logf("%s: works, fence %d", h.name, ls.Fence())
	name := h.prefix + h.key
	n := 0
	for _, v := range c.values(t, name) {
		if v == ls.Token() {
			n++
		}
	}
	if n < len(c.nodes)/2+1 {
		t.Errorf("%s key: its token is on %d nodes under its name", h.name, n)
	}
}
