package testbed

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestPacketLink checks the packet-level faults on real Redis servers: a
// cut link is silent (no reply, no reset) while another client's link to
// the same server works; DropReplies lets requests take effect; Heal
// resumes the same connection; a peer cut stops the traffic between two
// servers; a restarted node gets its link, address and fault back; and
// RoutePacketLinksTo moves a node's address to another server and back.
func TestPacketLink(t *testing.T) {
	RequireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs := StartRedis(t, 2, RedisOptions{})
	a, b := rs[0].PacketLink("a"), rs[0].PacketLink("b")
	if a.Addr() == b.Addr() {
		t.Fatalf("two clients share the address %s", a.Addr())
	}
	ca := dialPacket(t, ctx, a.Addr())
	mustDo(t, ctx, ca, "SET", "k", "0")

	if err := a.Cut(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := doConn(ctx, ca, 500*time.Millisecond, "GET", "k"); !isTimeout(err) {
		t.Fatalf("cut link answered %q, %v; want a timeout", got, err)
	}
	mustDo(t, ctx, dialPacket(t, ctx, b.Addr()), "SET", "k", "b")

	if err := a.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	// The timed-out GET's reply arrives first on the healed connection.
	if got := mustDo(t, ctx, ca, "PING"); got != "b" {
		t.Fatalf("healed link: first reply %q, want the late GET's \"b\"", got)
	}
	if got, err := ca.read(); got != "PONG" || err != nil {
		t.Fatalf("healed link: second reply %q, %v; want PONG", got, err)
	}

	if err := a.DropReplies(ctx); err != nil {
		t.Fatal(err)
	}
	if c := dialPacketTimeout(ctx, a.Addr()); c != nil {
		t.Fatal("DropReplies: a new connection completed its handshake")
	}
	if _, err := doConn(ctx, ca, 500*time.Millisecond, "SET", "k", "a"); !isTimeout(err) {
		t.Fatalf("DropReplies: want a timeout, got %v", err)
	}
	if got, _ := rs[0].do(ctx, "GET", "k"); got != "a" {
		t.Fatalf("DropReplies: request did not take effect: k = %q", got)
	}

	peerCheck := "timeout 2 redis-cli -h " + rs[1].IP() + " PING | grep -q PONG"
	if err := rs[0].sh(ctx, peerCheck); err != nil {
		t.Fatalf("peers before the cut: %v", err)
	}
	if err := rs[0].CutPeer(ctx, rs[1].Node); err != nil {
		t.Fatal(err)
	}
	if err := rs[0].sh(ctx, peerCheck); err == nil {
		t.Fatal("peer reachable after CutPeer")
	}
	if err := rs[0].HealPeer(ctx, rs[1].Node); err != nil {
		t.Fatal(err)
	}
	if err := rs[0].sh(ctx, peerCheck); err != nil {
		t.Fatalf("peers after HealPeer: %v", err)
	}

	addr := a.Addr()
	if err := rs[0].Restart(ctx); err != nil { // a new network namespace
		t.Fatal(err)
	}
	if a.Addr() != addr {
		t.Fatalf("address changed on restart: %s, was %s", a.Addr(), addr)
	}
	if c := dialPacketTimeout(ctx, a.Addr()); c != nil {
		t.Fatal("DropReplies lost on restart: handshake completed")
	}
	if err := a.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	ca = dialPacket(t, ctx, a.Addr())
	if got := mustDo(t, ctx, ca, "PING"); got != "PONG" {
		t.Fatalf("after restart and heal: %q", got)
	}
	testRoutePacketLinks(t, ctx, rs, a, ca)
}

// TestPacketLinkKeepsPublishedPort: giving a node its client address does
// not move its published port, even when the node's only network sorts
// after the client network by name (Docker publishes a container's ports
// through its gateway network, which a new network may otherwise become).
func TestPacketLinkKeepsPublishedPort(t *testing.T) {
	RequireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := dockerClient()
	if err != nil {
		t.Fatal(err)
	}
	name := "zz-distlock-peers-" + runID
	created, err := cli.networkCreate(ctx, name, false, netip.Prefix{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // registered first: runs after the container is removed
		_ = cli.networkRemove(context.Background(), created)
	})
	r := &RedisNode{}
	spec := redisSpec(t, r, "redis-zz", Images.Redis.Resolve(t), RedisOptions{}, "")
	spec.network, spec.aliases = &dockerNetwork{ID: created, Name: name}, []string{"redis-zz"}
	finishRedis(t, []*RedisNode{r}, startNodes(t, []nodeSpec{spec}))
	before := r.HostAddr()
	l := r.PacketLink("a")
	if got := mustDo(t, ctx, dialPacket(t, ctx, l.Addr()), "PING"); got != "PONG" {
		t.Fatalf("through the packet link: %q", got)
	}
	if after, err := mappedAddr(ctx, r.id, r.port); err != nil || after != before {
		t.Fatalf("published port moved from %s to %s (%v) when the client address was added", before, after, err)
	}
	if _, err := r.do(ctx, "PING"); err != nil {
		t.Fatalf("straight to the published port: %v", err)
	}
}

// testRoutePacketLinks moves rs[0]'s address (with link a and its open
// connection ca) to rs[1] and back: the dialled address reaches the
// server that carries it, a connection from before the move ends, and
// a fault set while moved applies there.
func testRoutePacketLinks(t *testing.T, ctx context.Context, rs []*RedisNode, a *PacketLink, ca *respConn) {
	if _, err := rs[1].do(ctx, "SET", "k", "one"); err != nil {
		t.Fatal(err)
	}
	if err := rs[0].Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rs[0].RoutePacketLinksTo(ctx, rs[1].Node); err != nil {
		t.Fatal(err)
	}
	if got, err := doConn(ctx, ca, 2*time.Second, "PING"); err == nil || isTimeout(err) {
		t.Fatalf("connection from before the move: %q, %v; want it ended (closed or reset)", got, err)
	}
	moved := dialMoved(t, ctx, a.Addr())
	if got := mustDo(t, ctx, moved, "GET", "k"); got != "one" {
		t.Fatalf("moved address reached k = %q, want rs[1]'s \"one\"", got)
	}
	if err := a.Cut(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := doConn(ctx, moved, 500*time.Millisecond, "PING"); !isTimeout(err) {
		t.Fatalf("cut on the moved link: %v, want a timeout", err)
	}
	if err := a.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rs[0].Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rs[0].RoutePacketLinksTo(ctx, rs[0].Node); err != nil {
		t.Fatal(err)
	}
	if _, err := rs[0].do(ctx, "SET", "k", "zero"); err != nil {
		t.Fatal(err)
	}
	if got := mustDo(t, ctx, dialMoved(t, ctx, a.Addr()), "GET", "k"); got != "zero" {
		t.Fatalf("address moved back reached k = %q, want rs[0]'s \"zero\"", got)
	}
}

// dialMoved dials an address that has just moved to another container,
// for up to 3 s: the first SYN is sometimes lost (its retransmission
// comes a second later).
func dialMoved(t *testing.T, ctx context.Context, addr string) *respConn {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	c := dialPacketTimeout(ctx, addr)
	for c == nil && time.Now().Before(deadline) {
		c = dialPacketTimeout(ctx, addr)
	}
	if c == nil {
		t.Fatalf("dial %s failed for 3 s after the move", addr)
	}
	t.Cleanup(func() { _ = c.Close() })
	return newRespConn(c)
}

func dialPacketTimeout(ctx context.Context, addr string) net.Conn {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil
	}
	return c
}

func dialPacket(t *testing.T, ctx context.Context, addr string) *respConn {
	t.Helper()
	c := dialPacketTimeout(ctx, addr)
	if c == nil {
		t.Fatalf("dial %s failed", addr)
	}
	t.Cleanup(func() { _ = c.Close() })
	return newRespConn(c)
}

// doConn runs one command on c, bounded by d.
func doConn(ctx context.Context, c *respConn, d time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return c.do(ctx, args...)
}

func mustDo(t *testing.T, ctx context.Context, c *respConn, args ...string) string {
	t.Helper()
	got, err := doConn(ctx, c, 5*time.Second, args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return got
}
