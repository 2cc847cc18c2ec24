package bench

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/distlock/distlock/etcdlock"
	"github.com/distlock/distlock/testbed"
)

// etcdCluster is a 3-member etcd 3.4 cluster addressed by its containers'
// own addresses (not through the testbed's proxies nor Docker's userland
// port proxy; see startRedis).
type etcdCluster struct {
	c     *testbed.EtcdCluster
	addrs []string
}

// DISTLOCK_ETCD_BENCH_TMPFS=1 puts the members' data on a tmpfs, so that
// fsync costs nothing (on an overlay disk an fsync can take milliseconds
// and dominate every figure).
func startEtcd(b testing.TB) *etcdCluster {
	b.Helper()
	testbed.RequireDocker(b)
	c := testbed.StartEtcd(b, 3, testbed.EtcdOptions{Tmpfs: os.Getenv("DISTLOCK_ETCD_BENCH_TMPFS") == "1"})
	e := &etcdCluster{c: c}
	for _, n := range c.Nodes {
		out, err := exec.Command("docker", "inspect", "-f",
			"{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", n.ContainerID()).Output()
		ip := strings.Fields(string(out))
		if err != nil || len(ip) == 0 {
			b.Logf("no network address (%v): using the published port", err)
			e.addrs = append(e.addrs, n.HostAddr())
			continue
		}
		e.addrs = append(e.addrs, net.JoinHostPort(ip[0], "2379"))
	}
	return e
}

// client returns an etcd client of every member, closed when b ends.
func (e *etcdCluster) client(b testing.TB) *clientv3.Client {
	b.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.addrs, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cli.Close() })
	return cli
}

// ours returns an etcdlock Locker on its own client, closed when b ends.
func (e *etcdCluster) ours(b testing.TB, opts *etcdlock.Options) *etcdlock.Locker {
	b.Helper()
	l, err := etcdlock.New(e.client(b), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return l
}

// session returns a concurrency.Session (the peer) on cli with the
// library's default TTL (60 s), closed when b ends.
func session(b testing.TB, cli *clientv3.Client) *concurrency.Session {
	b.Helper()
	s, err := concurrency.NewSession(cli)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

type etcdOursContender struct{ l *etcdlock.Locker }

func (c etcdOursContender) acquire(ctx context.Context, key string) (func(context.Context) error, error) {
	ls, err := c.l.Acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	return ls.Release, nil
}

// mutexContender is concurrency.Mutex on its own session: two Mutexes of
// one key must not share a session (they would share the key).
type mutexContender struct{ s *concurrency.Session }

func (c mutexContender) acquire(ctx context.Context, key string) (func(context.Context) error, error) {
	m := concurrency.NewMutex(c.s, key)
	if err := m.Lock(ctx); err != nil {
		return nil, err
	}
	return m.Unlock, nil
}

// etcdContenders returns k contenders of impl ("ours" or "peer"): ours
// spread over up to maxLockers Lockers (one client each; a Locker gives
// each acquisition of a key it already holds or waits for its own lease),
// the peer's over k sessions on up to maxLockers clients.
func etcdContenders(b *testing.B, e *etcdCluster, impl string, k int) []contender {
	b.Helper()
	n := min(k, maxLockers)
	out := make([]contender, k)
	switch impl {
	case "ours":
		ls := make([]*etcdlock.Locker, n)
		for i := range ls {
			ls[i] = e.ours(b, nil)
		}
		for i := range out {
			out[i] = etcdOursContender{ls[i%n]}
		}
	case "peer":
		clis := make([]*clientv3.Client, n)
		for i := range clis {
			clis[i] = e.client(b)
		}
		for i := range out {
			out[i] = mutexContender{session(b, clis[i%n])}
		}
	case "floor":
		out = etcdFloors(b, e, k)
	default:
		b.Fatalf("unknown implementation %q", impl)
	}
	warm(b, out)
	return out
}
