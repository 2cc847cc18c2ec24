package redlock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/keytest"
	"github.com/distlock/distlock/redlock"
)

// Tenant prefixes of the hostile-key table.
const (
	tenantA = "tenantA:"
	tenantB = "tenantB:"
)

// TestHostileKeysTable runs the hostile-key table (docs/keys.md) on three
// real masters: a key is any byte string of 1..MaxKeyLen bytes whose
// Prefix + key has no "distlock:"; tenants are Lockers with different
// prefixes.
func TestHostileKeysTable(t *testing.T) {
	c := startCluster(t, 3)
	// A node timeout that a loaded test host does not run into.
	a := &redlock.Options{Prefix: tenantA, NodeTimeout: time.Second}
	keytest.Run(t, keytest.Backend{
		A1:           c.locker(t, "a1", a),
		A2:           c.locker(t, "a2", a),
		B:            c.locker(t, "b", &redlock.Options{Prefix: tenantB, NodeTimeout: time.Second}),
		Cases:        append(keytest.Common(), keytest.Case{Name: "reserved across prefix and key", Key: "x:distlock:y"}),
		Refused:      refusedKey,
		TokenHolders: true,
	})
}

// refusedKey is the limit redlock names for key under tenantA, "" if it
// accepts it.
func refusedKey(key string) string {
	if limit := keytest.Limit(key); limit != "" {
		return limit
	}
	if strings.Contains(tenantA+key, "distlock:") {
		return `"distlock:"`
	}
	return ""
}

// TestKeyLayoutGolden pins the names a lock uses on every node, which two
// versions (and redsync) sharing a lock must agree on: the lock is Prefix
// + key, bytes as given, holding only the token; a waiter's queue is
// Prefix + "distlock:q:" + key; the fence counter is Prefix +
// "distlock:fence".
func TestKeyLayoutGolden(t *testing.T) {
	c := startCluster(t, 3)
	opts := &redlock.Options{Prefix: tenantA}
	holder, waiter := c.locker(t, "holder", opts), c.locker(t, "waiter", opts)
	for _, key := range []string{"{x}", "a\x00", "a/b"} {
		held := mustAcquire(t, holder, key)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if ls, err := waiter.Acquire(ctx, key); err == nil {
				_ = ls.Release(context.Background())
			}
		}()
		queue := "tenantA:distlock:q:" + key
		want := []string{"tenantA:" + key, "tenantA:distlock:fence", queue}
		slices.Sort(want)
		for i, n := range c.nodes {
			eventually(t, 5*time.Second, "waiter never queued", func() bool {
				return n.Admin().Exists(context.Background(), queue).Val() == 1
			})
			got := n.Admin().Keys(context.Background(), "tenantA:*").Val()
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("node %d, key %q: keys %q, want %q", i, key, got, want)
			}
			if v := n.Admin().Get(context.Background(), "tenantA:"+key).Val(); v != held.Token() {
				t.Errorf("node %d: lock value %q, want the token", i, v)
			}
		}
		cancel()
		<-done
		mustRelease(t, held)
	}
}

// TestLongKeyAfterIdle: a request longer than a connection's write buffer
// (a key of MaxKeyLen bytes) on a connection idle for longer than the
// node timeout is sent under its own deadline, not the expired one of the
// connection's previous request.
func TestLongKeyAfterIdle(t *testing.T) {
	c := startCluster(t, 3)
	const nodeTimeout = 200 * time.Millisecond
	l := c.locker(t, "a", &redlock.Options{NodeTimeout: nodeTimeout})
	key := strings.Repeat("k", redlock.MaxKeyLen)
	ls := mustAcquire(t, l, key)
	time.Sleep(2 * nodeTimeout)
	mustRelease(t, ls)
	ls = mustAcquire(t, l, key)
	time.Sleep(2 * nodeTimeout)
	if was, err := distlock.ForceRelease(context.Background(), l, key); err != nil || !was {
		t.Fatalf("ForceRelease after idle: %v %v", was, err)
	}
	if err := ls.Release(context.Background()); !errors.Is(err, distlock.ErrLeaseLost) {
		t.Fatalf("Release of the evicted lease: %v, want ErrLeaseLost", err)
	}
}
