package redlock

import (
	"context"
	"errors"
	"testing"

	"github.com/distlock/distlock/testbed"
)

// TestFailedAcquireUnlockReturnsConnections: an acquisition that took a
// minority of the nodes unlocks them, and hands the unlock's connections
// back to the pool: the next attempt reuses them instead of dialling a
// new connection per node.
func TestFailedAcquireUnlockReturnsConnections(t *testing.T) {
	testbed.RequireDocker(t)
	nodes := testbed.StartRedis(t, 3, testbed.RedisOptions{})
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Link("split").Addr()
	}
	l, err := New(addrs, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	ctx := context.Background()
	const key, attempts = "split-conns", 20
	for _, n := range nodes[1:] { // another holder on 2 of 3: we can take only node 0
		if err := n.Admin().Set(ctx, key, "someone-else", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for range attempts {
		_, err := l.TryAcquire(ctx, key)
		var qe *QuorumError
		if !errors.As(err, &qe) || qe.Acquired != 1 {
			t.Fatalf("TryAcquire: %v, want a QuorumError with 1 node acquired", err)
		}
	}
	if v, err := nodes[0].Admin().Exists(ctx, key).Result(); err != nil || v != 0 {
		t.Fatalf("node 0 still holds the key after the failed acquisitions (exists %d, %v)", v, err)
	}
	n := l.nodes[0]
	n.mu.Lock()
	open, idle := len(n.conns), len(n.idle)
	n.mu.Unlock()
	if open > 2 || open != idle {
		t.Fatalf("after %d split acquisitions node 0 has %d open connections, %d idle; want at most 2, all idle", attempts, open, idle)
	}
}
