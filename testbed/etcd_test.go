package testbed

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestEtcdCluster starts 3 members, writes through one client's links,
// kills the leader (a new one is elected, writes go on, the old leader
// rejoins with its data), then isolates the new leader from its peers (the
// other two elect a third leader while the isolated one still answers its
// clients) and rejoins it.
func TestEtcdCluster(t *testing.T) {
	RequireDocker(t)
	c := StartEtcd(t, 3, EtcdOptions{})
	for _, n := range c.Nodes {
		requireMount(t, n.Node, etcdDataDir, mountVolume)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := c.Client(t, "a")
	put := func(k string) {
		t.Helper()
		pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
		defer pcancel()
		for {
			_, err := cli.Put(pctx, k, "v")
			if err == nil {
				return
			}
			if pctx.Err() != nil {
				t.Fatalf("put %s: %v", k, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	put("k0")

	first, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ld := c.Nodes[first]
	if err := ld.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Fatalf("leader %d still leader after its kill", first)
	}
	put("k1")
	if err := ld.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// The restarted member kept its data and caught up.
	waitEtcdValue(t, ctx, c.Nodes[first], "k1")

	iso := c.Nodes[second]
	if err := iso.Isolate(ctx); err != nil {
		t.Fatal(err)
	}
	third := -1
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) { // the two others elect one of them
		if i, err := c.leaderAmong(ctx, first, 3-first-second); err == nil {
			third = i
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if third < 0 || third == second {
		t.Fatalf("no new leader among the members left after isolating %d", second)
	}
	// The isolated member still answers its clients (links), without quorum.
	sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
	_, serr := iso.Admin().Status(sctx, iso.Link(etcdAdminLink).Addr())
	scancel()
	if serr != nil {
		t.Fatalf("isolated member unreachable through its link: %v", serr)
	}
	put("k2")
	if err := iso.Rejoin(ctx); err != nil {
		t.Fatal(err)
	}
	waitEtcdValue(t, ctx, iso, "k2")
	if _, err := c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
}

// leaderAmong reports the leader if members i and j agree on one of them.
func (c *EtcdCluster) leaderAmong(ctx context.Context, i, j int) (int, error) {
	var ids []uint64
	for _, k := range []int{i, j} {
		n := c.Nodes[k]
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := n.Admin().Status(sctx, n.Link(etcdAdminLink).Addr())
		cancel()
		if err != nil {
			return -1, err
		}
		ids = append(ids, st.Leader)
	}
	if ids[0] != ids[1] {
		return -1, fmt.Errorf("disagree: %x %x", ids[0], ids[1])
	}
	for _, k := range []int{i, j} {
		if c.Nodes[k].MemberID() == ids[0] {
			return k, nil
		}
	}
	return -1, fmt.Errorf("leader %x not among them", ids[0])
}

// waitEtcdValue waits until a serializable read on member n sees key.
func waitEtcdValue(t *testing.T, ctx context.Context, n *EtcdNode, key string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		gctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := n.Admin().Get(gctx, key, clientv3.WithSerializable())
		cancel()
		if err == nil && len(resp.Kvs) == 1 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s never saw %s", n.Name(), key)
}

// TestEtcdSingle starts one member: it serves at once, keeps its data
// across Kill and Start, and cannot be isolated.
func TestEtcdSingle(t *testing.T) {
	RequireDocker(t)
	c := StartEtcd(t, 1, EtcdOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := c.Nodes[0]
	if i, err := c.Leader(ctx); err != nil || i != 0 {
		t.Fatalf("leader %d, %v", i, err)
	}
	cli := c.Client(t, "a")
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	gctx, gcancel := context.WithTimeout(ctx, 20*time.Second)
	defer gcancel()
	for {
		resp, err := cli.Get(gctx, "k")
		if err == nil {
			if len(resp.Kvs) != 1 {
				t.Fatalf("data lost across restart: %v", resp.Kvs)
			}
			break
		}
		if gctx.Err() != nil {
			t.Fatalf("get after restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := n.Isolate(ctx); err == nil {
		t.Fatal("Isolate of a single member succeeded")
	}
}

// TestEtcdFrozenMajorityKeepsLeader freezes the leader and a follower for
// longer than the longest election timeout (2 s: the default 1 s,
// randomized up to twice that), as the conformance scenario S15 does: the
// member left running campaigns alone meanwhile. Once they are unfrozen,
// the cluster keeps its leader and term and serves a write within one
// election timeout. Without pre-vote, the lone member's campaigns raise
// its term, which deposes the leader on the unfreeze; if its log is
// behind, it then forces an election at every timeout of its own that it
// cannot win, and the cluster has no leader for seconds.
func TestEtcdFrozenMajorityKeepsLeader(t *testing.T) {
	RequireDocker(t)
	c := StartEtcd(t, 3, EtcdOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ld, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	term := func(n *EtcdNode) uint64 {
		t.Helper()
		sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
		defer scancel()
		st, err := n.Admin().Status(sctx, n.Link(etcdAdminLink).Addr())
		if err != nil {
			t.Fatalf("status of %s: %v", n.Name(), err)
		}
		return st.RaftTerm
	}
	before := term(c.Nodes[ld])
	frozen := []*EtcdNode{c.Nodes[ld], c.Nodes[(ld+1)%len(c.Nodes)]}
	for _, n := range frozen {
		if err := n.Pause(ctx); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second)
	for _, n := range frozen {
		if err := n.Unpause(ctx); err != nil {
			t.Fatal(err)
		}
	}
	unfrozen := time.Now()
	cli := c.Client(t, "a")
	for {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err := cli.Put(pctx, "k", "v")
		pcancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("put after the unfreeze: %v", err)
		}
	}
	served := time.Since(unfrozen)
	after, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after != ld || term(c.Nodes[after]) != before {
		t.Errorf("leader %d at term %d after the unfreeze, want %d at term %d", after, term(c.Nodes[after]), ld, before)
	}
	if served > time.Second {
		t.Errorf("first write served %v after the unfreeze, want within the 1 s election timeout", served.Round(time.Millisecond))
	}
}
