package bench

import (
	"context"
	"net"
	"os/exec"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/distlock/distlock/redissingle"
	"github.com/distlock/distlock/testbed"
)

// server is one volatile Redis in a container.
type server struct {
	node *testbed.RedisNode
	addr string // the container's own address on the Docker bridge
}

// startRedis starts one volatile Redis for b (skipped under -short or
// without Docker). Benchmarks connect to the container's bridge address,
// not through the testbed's fault-injecting proxy nor Docker's userland
// port proxy, each of which adds latency to every round trip.
func startRedis(b *testing.B) *server {
	b.Helper()
	testbed.RequireDocker(b)
	node := testbed.StartRedis(b, 1, testbed.RedisOptions{})[0]
	out, err := exec.Command("docker", "inspect", "-f",
		"{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", node.ContainerID()).Output()
	ip := strings.Fields(string(out))
	if err != nil || len(ip) == 0 {
		b.Logf("no bridge address (%v): using the published port", err)
		return &server{node: node, addr: node.HostAddr()}
	}
	return &server{node: node, addr: net.JoinHostPort(ip[0], "6379")}
}

// counter counts the requests (top-level commands) clients send.
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// newClient returns a client to s, closed when b ends; if count is not
// nil, it counts the client's requests.
func newClient(b *testing.B, s *server, count *counter) *redis.Client {
	b.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                     s.addr,
		PoolSize:                 128,
		DisableIdentity:          true, // CLIENT SETINFO needs Redis 7.2
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	if count != nil {
		c.AddHook(count)
	}
	b.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		b.Fatalf("ping: %v", err)
	}
	return c
}

// newLocker returns a redissingle Locker over its own client (and so its
// own pub/sub connection), closed when b ends.
func newLocker(b *testing.B, s *server, count *counter, opts *redissingle.Options) *redissingle.Locker {
	b.Helper()
	l, err := redissingle.New(newClient(b, s, count), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return l
}

// percentile returns the p-th percentile (0..1) of ds, sorting them.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	i := int(p * float64(len(ds)-1))
	return ds[i]
}

// median returns the median of xs.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
