package redissingle_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/keytest"
	"github.com/distlock/distlock/redissingle"
)

// Tenant prefixes of the hostile-key table.
const (
	tenantA = "tenantA:"
	tenantB = "tenantB:"
)

// TestHostileKeysTable runs the hostile-key table (docs/keys.md) on a real
// server: a key is any byte string of 1..MaxKeyLen bytes whose Prefix +
// key has no "distlock:"; tenants are Lockers with different prefixes.
func TestHostileKeysTable(t *testing.T) {
	s := startRedis(t)
	a := &redissingle.Options{Prefix: tenantA}
	keytest.Run(t, keytest.Backend{
		A1:           s.locker(t, "a1", a),
		A2:           s.locker(t, "a2", a),
		B:            s.locker(t, "b", &redissingle.Options{Prefix: tenantB}),
		Cases:        append(keytest.Common(), keytest.Case{Name: "reserved across prefix and key", Key: "x:distlock:y"}),
		Refused:      refusedKey,
		TokenHolders: true,
	})
}

// refusedKey is the limit redissingle names for key under tenantA, "" if
// it accepts it.
func refusedKey(key string) string {
	if limit := keytest.Limit(key); limit != "" {
		return limit
	}
	if strings.Contains(tenantA+key, "distlock:") {
		return `"distlock:"`
	}
	return ""
}

// TestKeyLayoutGolden pins the names a lock uses on the server, which two
// versions sharing a lock must agree on: the lock is Prefix + key, bytes
// as given; a waiter's queue is Prefix + "distlock:{T}:q:" + key, where T
// is the first of the 3-character alphanumeric tags (in 0-9a-zA-Z order)
// whose hash slot is the lock's; the fence counter is Prefix +
// "distlock:fence". Braces in the key move the lock's slot (Redis hashes
// its tag) and the queue's tag follows; the queue's own tag comes first,
// so a key's braces never decide the queue's slot. The values were
// checked with an independent CRC-16/XMODEM (Python).
func TestKeyLayoutGolden(t *testing.T) {
	s := startRedis(t)
	opts := &redissingle.Options{Prefix: tenantA}
	holder, waiter := s.locker(t, "holder", opts), s.locker(t, "waiter", opts)
	ctx := context.Background()
	for key, queue := range map[string]string{
		"{x}":   "tenantA:distlock:{2Ra}:q:{x}",   // slot 16287, that of "x"
		"x":     "tenantA:distlock:{6XC}:q:x",     // slot 2228
		"a\x00": "tenantA:distlock:{1L4}:q:a\x00", // slot 3299
		"{":     "tenantA:distlock:{7Ha}:q:{",     // slot 14551: "{" opens no tag
	} {
		held := mustAcquire(t, holder, key)
		got := acquireAsync(t, ctx, waiter, key)
		eventually(t, hostileKeyWait, "waiter never queued", func() bool {
			return len(s.keysMatching(t, "tenantA:distlock:*:q:*")) > 0
		})
		if names := s.keysMatching(t, "tenantA:distlock:*:q:*"); !slices.Equal(names, []string{queue}) {
			t.Errorf("key %q: wait queue %q, want %q", key, names, queue)
		}
		if v, err := s.admin().Get(ctx, tenantA+key).Result(); err != nil || !strings.HasPrefix(v, held.Token()) {
			t.Fatalf("lock key %q: %q %v, want the holder's token", tenantA+key, v, err)
		}
		if n, err := s.admin().Exists(ctx, "tenantA:distlock:fence").Result(); err != nil || n != 1 {
			t.Fatalf("fence counter: %d %v", n, err)
		}
		mustRelease(t, held)
		if ls := <-got; ls != nil {
			mustRelease(t, ls)
		}
	}
}
