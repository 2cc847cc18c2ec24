package redissingle_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redissingle"
	"github.com/distlock/distlock/testbed"
)

// TestTLSClusterURL opens a rediss+cluster:// URL with an ACL user against
// a one-node Redis Cluster serving TLS (the node holds every slot and
// announces the address the test reaches it by), and locks and hands
// over through go-redis's cluster client. A smoke test of the URL form:
// failover and several nodes are the conformance suite's.
func TestTLSClusterURL(t *testing.T) {
	testbed.RequireDocker(t)
	ca := testbed.NewCA(t)
	pair := ca.Server(t)
	n := testbed.StartRedis(t, 1, testbed.RedisOptions{
		TLS: &pair, CA: ca.PEM, Users: []testbed.RedisUser{{Name: "app", Password: aclPassword}},
		Args: []string{"--cluster-enabled", "yes"},
	})[0]
	ctx := context.Background()
	host, port, err := net.SplitHostPort(n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	admin := n.Admin()
	for _, cmd := range [][]any{
		{"CONFIG", "SET", "cluster-announce-ip", host},
		{"CONFIG", "SET", "cluster-announce-tls-port", port},
		{"CLUSTER", "ADDSLOTSRANGE", 0, 16383},
	} {
		if err := admin.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	eventually(t, 10*time.Second, "cluster_state:ok", func() bool {
		info, err := admin.ClusterInfo(ctx).Result()
		return err == nil && strings.Contains(info, "cluster_state:ok")
	})
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, []byte(ca.PEM), 0o600); err != nil {
		t.Fatal(err)
	}
	raw := fmt.Sprintf("rediss+cluster://app:%s@%s?tls_ca=%s&dial_timeout=2s", aclPassword, n.Addr(), caFile)
	open := func() distlock.Locker {
		l, err := distlock.Open(ctx, raw)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	l1, l2 := open(), open()
	if g := l1.Guarantees(); !strings.HasPrefix(g.FenceScope, "hash slot") {
		t.Fatalf("fence scope %q: not a cluster client", g.FenceScope)
	}
	if s := l1.(*redissingle.Locker).String(); !strings.Contains(s, "cluster "+n.Addr()) || strings.Contains(s, aclPassword) {
		t.Fatalf("String %q", s)
	}
	key := uniqueKey(t)
	held := mustAcquire(t, l1, key)
	got := acquireAsync(t, ctx, l2, key)
	mustRelease(t, held)
	select {
	case next := <-got:
		if next == nil {
			t.Fatal("waiter failed")
		}
		if next.Fence() <= held.Fence() {
			t.Fatalf("fence %d after %d", next.Fence(), held.Fence())
		}
		mustRelease(t, next)
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not handed the lock within 10s")
	}
}
