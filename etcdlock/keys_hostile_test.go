package etcdlock_test

import (
	"context"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/etcdlock"
	"github.com/distlock/distlock/internal/keytest"
)

// Tenant prefixes of the hostile-key table.
const (
	tenantA = "tenantA/"
	tenantB = "tenantB/"
)

// TestHostileKeysTable runs the hostile-key table (docs/keys.md) on a real
// member: a key is any byte string of 1..MaxKeyLen bytes; "a", "a/",
// "a/b" and "a/<lease id>" are independent locks, and tenants are Lockers
// with different prefixes.
func TestHostileKeysTable(t *testing.T) {
	c := startMember(t)
	a := &etcdlock.Options{Prefix: tenantA}
	keytest.Run(t, keytest.Backend{
		A1: c.locker(t, "a1", a),
		A2: c.locker(t, "a2", a),
		B:  c.locker(t, "b", &etcdlock.Options{Prefix: tenantB}),
		Cases: append(keytest.Common(),
			keytest.Case{Name: "stream keeper name", Key: "\x00distlock-stream-keeper"},
			keytest.Case{Name: "lease id", Key: "694d7c3e1a2b3c4d"},
			keytest.Case{Name: "lease id after trailing slash", Key: "a//694d7c3e1a2b3c4d"},
		),
		Refused:      keytest.Limit,
		TokenHolders: true,
	})
}

// TestKeyLayoutGolden pins the etcd key of a holder's entry, which two
// versions, concurrency.Mutex and etcdctl sharing a lock must agree on:
// Prefix + key + "/" + the entry's etcd lease ID in lower-case hex, bytes
// as given, its value the lease's token.
func TestKeyLayoutGolden(t *testing.T) {
	c := startMember(t)
	l := c.locker(t, "a", &etcdlock.Options{Prefix: tenantA})
	admin := c.admin(t)
	for _, key := range []string{"a", "a/", "a/b", "\x00\xff", "{x}"} {
		ls := mustAcquire(t, l, key)
		resp, err := admin.Get(context.Background(), tenantA, clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 {
			t.Fatalf("key %q: %d etcd keys under the prefix, want 1", key, len(resp.Kvs))
		}
		kv := resp.Kvs[0]
		if want := fmt.Sprintf("%s%s/%x", tenantA, key, kv.Lease); string(kv.Key) != want || kv.Lease == 0 {
			t.Errorf("key %q: entry %q, want %q", key, kv.Key, want)
		}
		if string(kv.Value) != ls.Token() {
			t.Errorf("key %q: entry value %q, want the token", key, kv.Value)
		}
		mustRelease(t, ls)
	}
}
