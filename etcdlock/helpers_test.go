package etcdlock_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/testbed"
)

// TestMain checks that no goroutine of ours (session renewals, clean-ups,
// watchdogs) outlives the tests. The Docker client's idle HTTP
// connections and gRPC's process-wide goroutines are not ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc.(*addrConn).resetTransportAndUnlock"),
	)
}

// cluster is a 3-member etcd cluster for one test.
type cluster struct {
	*testbed.EtcdCluster
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	testbed.RequireDocker(t)
	return &cluster{testbed.StartEtcd(t, 3, testbed.EtcdOptions{})}
}

// startMember starts a single-member etcd "cluster" for one test.
func startMember(t *testing.T) *cluster {
	t.Helper()
	testbed.RequireDocker(t)
	return &cluster{testbed.StartEtcd(t, 1, testbed.EtcdOptions{})}
}

// locker returns a Locker over a client of the links named link, both
// closed when t ends.
func (c *cluster) locker(t testing.TB, link string, opts *etcdlock.Options) *etcdlock.Locker {
	t.Helper()
	l, err := etcdlock.New(c.Client(t, link), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// admin is a client of the testbed's own links.
func (c *cluster) admin(t testing.TB) *clientv3.Client { return c.Client(t, "test-admin") }

// entries lists the keys under the lock prefix of key, in create order.
func entries(t testing.TB, cli *clientv3.Client, key string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		t.Fatalf("get %s/: %v", key, err)
	}
	out := make([]string, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		out[i] = string(kv.Key)
	}
	return out
}

// waitEntries waits until key has n entries.
func waitEntries(t *testing.T, admin *clientv3.Client, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(entries(t, admin, key)) != n {
		if time.Now().After(deadline) {
			t.Fatalf("entries of %q: %v, want %d", key, entries(t, admin, key), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// acquired is the outcome of an Acquire run in the background.
type acquired struct {
	ls  distlock.Lease
	err error
}

// acquireAsync runs l.Acquire(key) in the background, bounded by 30 s.
func acquireAsync(l *etcdlock.Locker, key string, opts ...distlock.Option) <-chan acquired {
	got := make(chan acquired, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ls, err := l.Acquire(ctx, key, opts...)
		got <- acquired{ls, err}
	}()
	return got
}

// acquireAsyncInto runs l.Acquire(key) in the background as acquireAsync
// does, delivering to got (buffered).
func acquireAsyncInto(l *etcdlock.Locker, key string, got chan<- acquired) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ls, err := l.Acquire(ctx, key)
		got <- acquired{ls, err}
	}()
}

// Shared helpers (internal/locktest), under the names the tests use.
var (
	uniqueKey   = locktest.UniqueKey
	eventually  = locktest.Eventually
	mustAcquire = locktest.MustAcquire
	mustRelease = locktest.MustRelease
	wantErr     = locktest.WantErr
	notErr      = locktest.NotErr
)

// wantGranted checks that the background Acquire delivering to got
// returns a lease within 5 s, and releases it; when says when the waiter
// should have been granted.
func wantGranted(t *testing.T, got <-chan acquired, when string) {
	t.Helper()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("the waiter %s: %v", when, r.err)
		}
		mustRelease(t, r.ls)
	case <-time.After(5 * time.Second):
		t.Fatalf("the waiter was not granted %s", when)
	}
}
