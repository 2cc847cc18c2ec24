package bench

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/testbed"
	"github.com/distlock/distlock/zklock"
)

// zkEnsemble is a 3-server ZooKeeper 3.8 ensemble addressed by its
// containers' addresses on their Docker network (not through the
// testbed's proxies nor Docker's userland port proxy; see startRedis).
type zkEnsemble struct {
	e     *testbed.ZooKeeperEnsemble
	addrs []string
}

func startZK(b testing.TB, opts testbed.ZooKeeperOptions) *zkEnsemble {
	b.Helper()
	testbed.RequireDocker(b)
	e := testbed.StartZooKeeperEnsemble(b, 3, opts)
	z := &zkEnsemble{e: e}
	for _, n := range e.Nodes {
		out, err := exec.Command("docker", "inspect", "-f",
			"{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", n.ContainerID()).Output()
		ip := strings.Fields(string(out))
		if err != nil || len(ip) == 0 {
			b.Logf("no network address (%v): using the published port", err)
			z.addrs = append(z.addrs, n.HostAddr())
			continue
		}
		z.addrs = append(z.addrs, net.JoinHostPort(ip[0], "2181"))
	}
	return z
}

type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// conn opens a go-zookeeper session (the peer's client), waits until it
// has a session and closes it when b ends.
func (z *zkEnsemble) conn(b testing.TB) *zk.Conn {
	b.Helper()
	c, events, err := zk.Connect(z.addrs, 30*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		c.Close()
		for range events {
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for c.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			b.Fatalf("no session: %v", c.State())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return c
}

// ours returns a zklock Locker (default options: TTL and session 30 s,
// with the testbed ensemble's 250 ms tick time), closed when b ends.
func (z *zkEnsemble) ours(b testing.TB, opts *zklock.Options) *zklock.Locker {
	b.Helper()
	var o zklock.Options
	if opts != nil {
		o = *opts
	}
	if o.TickTime == 0 {
		o.TickTime = 250 * time.Millisecond
	}
	l, err := zklock.New(z.addrs, &o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return l
}

// zkOurs and zkPeer are contenders (contend_test.go) over zklock and over
// go-zookeeper's Lock (a new zk.Lock per acquisition on a shared Conn;
// its lock nodes live under /bench-peer/<key>).
type zkOurs struct{ l *zklock.Locker }

func (c zkOurs) acquire(ctx context.Context, key string) (func(context.Context) error, error) {
	ls, err := c.l.Acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	return ls.Release, nil
}

type zkPeer struct{ c *zk.Conn }

func (c zkPeer) acquire(_ context.Context, key string) (func(context.Context) error, error) {
	lk := zk.NewLock(c.c, "/bench-peer/"+key, zk.WorldACL(zk.PermAll))
	if err := lk.Lock(); err != nil {
		return nil, err
	}
	return func(context.Context) error { return lk.Unlock() }, nil
}

// zkContenders returns n contenders of impl ("ours" or "peer") spread
// over up to maxLockers sessions.
func zkContenders(b *testing.B, z *zkEnsemble, impl string, n int) []contender {
	b.Helper()
	cs := make([]contender, min(n, maxLockers))
	for i := range cs {
		if impl == "ours" {
			cs[i] = zkOurs{z.ours(b, nil)}
		} else {
			cs[i] = zkPeer{z.conn(b)}
		}
	}
	out := make([]contender, n)
	for i := range out {
		out[i] = cs[i%len(cs)]
	}
	return out
}

// countNodes counts the nodes under (not including) root, recursively.
func countNodes(b testing.TB, c *zk.Conn, root string) int {
	b.Helper()
	children, _, err := c.Children(root)
	if err == zk.ErrNoNode {
		return 0
	}
	if err != nil {
		b.Fatalf("children of %s: %v", root, err)
	}
	n := len(children)
	for _, ch := range children {
		n += countNodes(b, c, root+"/"+ch)
	}
	return n
}
