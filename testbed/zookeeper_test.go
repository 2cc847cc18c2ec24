package testbed

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// zkConnect opens a go-zookeeper session on addrs, closed when t ends,
// and waits until it has a session.
func zkConnect(t *testing.T, addrs []string) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect(addrs, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkNoLog{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		for range events { // joins go-zookeeper's loop
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for c.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			t.Fatalf("no session with %v: %v", addrs, c.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c
}

type zkNoLog struct{}

func (zkNoLog) Printf(string, ...any) {}

// TestZooKeeperEnsemble: three servers form one quorum reachable through
// per-client links; a clock jump moves the servers' wall clocks (znode
// ctime) and 0 restores it; killing the leader leaves a serving quorum
// with a new leader; a restarted server rejoins with its data; a link
// fault hits only its own client.
func TestZooKeeperEnsemble(t *testing.T) {
	RequireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := StartZooKeeperEnsemble(t, 3, ZooKeeperOptions{})
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range e.Nodes {
		if m, err := n.Mode(ctx); err != nil || (i != leader && m != "follower") {
			t.Fatalf("%s: mode %q, %v", n.Name(), m, err)
		}
	}
	c := zkConnect(t, e.Addrs("a"))
	if _, err := c.Create("/before", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	checkClockJump(ctx, t, e, c)
	direct := checkLeaderKill(ctx, t, e, c, leader)
	checkLinkFault(t, e, direct)
}

// checkClockJump: a jump of +1h shows in the ctime of a new node; 0
// restores it. Every server applies the create with its own clock (the
// leader's is in the transaction), so the jump is made on all of them.
func checkClockJump(ctx context.Context, t *testing.T, e *ZooKeeperEnsemble, c *zk.Conn) {
	t.Helper()
	for _, n := range e.Nodes {
		if err := n.ClockJump(ctx, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = c.Create("/jumped", nil, 0, zk.WorldACL(zk.PermAll))
	_, st, err := c.Get("/jumped")
	if err != nil {
		t.Fatal(err)
	}
	if skew := time.UnixMilli(st.Ctime).Sub(time.Now()); skew < 50*time.Minute || skew > 70*time.Minute {
		t.Fatalf("ctime after a +1h jump is %v from now", skew)
	}
	for _, n := range e.Nodes {
		if err := n.ClockJump(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = c.Create("/restored", nil, 0, zk.WorldACL(zk.PermAll))
	if _, st, err = c.Get("/restored"); err != nil || time.Since(time.UnixMilli(st.Ctime)).Abs() > 5*time.Minute {
		t.Fatalf("ctime after restoring the clock: %v (%v)", time.UnixMilli(st.Ctime), err)
	}
}

// checkLeaderKill kills the leader: the two others elect a new one and
// keep serving; the restarted server serves the data written before and
// during its absence. It returns a client connected to that server
// directly.
func checkLeaderKill(ctx context.Context, t *testing.T, e *ZooKeeperEnsemble, c *zk.Conn, leader int) *zk.Conn {
	t.Helper()
	old := e.Nodes[leader]
	if err := old.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	var newLeader int
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for {
		newLeader, err = e.Leader(ctx)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || newLeader == leader {
		t.Fatalf("after killing the leader: leader %d, %v", newLeader, err)
	}
	if _, err := c.Create("/during", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create with the old leader down: %v", err)
	}
	if _, err := old.Mode(ctx); !errors.Is(err, ErrNodeDown) {
		t.Fatalf("Mode of a killed server: %v", err)
	}
	if err := old.Start(ctx); err != nil {
		t.Fatal(err)
	}
	direct := zkConnect(t, []string{old.Link("direct").Addr()})
	for _, p := range []string{"/before", "/during"} {
		if ok, _, err := direct.Exists(p); err != nil || !ok {
			t.Fatalf("restarted server: %s exists %v, %v", p, ok, err)
		}
	}
	return direct
}

// checkLinkFault: blackholing every server's link of client "a" leaves
// another client's (direct) link serving.
func checkLinkFault(t *testing.T, e *ZooKeeperEnsemble, direct *zk.Conn) {
	t.Helper()
	for _, n := range e.Nodes {
		n.Link("a").Blackhole()
	}
	if ok, _, err := direct.Exists("/before"); err != nil || !ok {
		t.Fatalf("another client's link was hit: %v %v", ok, err)
	}
	for _, p := range e.Links("a") {
		p.Heal()
	}
}

// TestZooKeeperStandalone: one server, killed and started again, keeps its
// data.
func TestZooKeeperStandalone(t *testing.T) {
	RequireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := StartZooKeeper(t, ZooKeeperOptions{})
	requireMount(t, n.Node, "/data", mountVolume)
	if m, err := n.Mode(ctx); err != nil || m != "standalone" {
		t.Fatalf("mode %q, %v", m, err)
	}
	c := zkConnect(t, []string{n.Addr()})
	if _, err := c.Create("/x", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, _, err := c.Exists("/x")
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after restart: exists %v, %v", ok, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
