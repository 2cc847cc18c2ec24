package bench

import (
	"context"
	"math"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/distlock/distlock/redlock"
	"github.com/distlock/distlock/testbed"
)

// rlCluster is n independent Redis masters, addressed by their Docker
// bridge addresses (see startRedis).
type rlCluster struct {
	nodes []*testbed.RedisNode
	addrs []string
}

func startRedlockNodes(t testing.TB, n int) *rlCluster {
	t.Helper()
	testbed.RequireDocker(t)
	c := &rlCluster{nodes: testbed.StartRedis(t, n, testbed.RedisOptions{})}
	for _, node := range c.nodes {
		out, err := exec.Command("docker", "inspect", "-f",
			"{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", node.ContainerID()).Output()
		ip := strings.Fields(string(out))
		if err != nil || len(ip) == 0 {
			t.Logf("no bridge address (%v): using the published port", err)
			c.addrs = append(c.addrs, node.HostAddr())
			continue
		}
		c.addrs = append(c.addrs, net.JoinHostPort(ip[0], "6379"))
	}
	return c
}

// ours returns a redlock Locker over the first n nodes, closed when t ends.
func (c *rlCluster) ours(t testing.TB, addrs []string, opts *redlock.Options) *redlock.Locker {
	t.Helper()
	l, err := redlock.New(addrs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// redsync returns a redsync over its own go-redis clients to addrs.
func (c *rlCluster) redsync(t testing.TB, addrs []string) *redsync.Redsync {
	t.Helper()
	var pools []rsredis.Pool
	for _, a := range addrs {
		cl := redis.NewClient(&redis.Options{
			Addr:                     a,
			PoolSize:                 128,
			DisableIdentity:          true,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		})
		t.Cleanup(func() { _ = cl.Close() })
		_ = cl.Ping(context.Background()).Err() // warm; a dead node is allowed
		pools = append(pools, goredis.NewPool(cl))
	}
	return redsync.New(pools...)
}

// redlockContender is ours in the contention harness (contend_test.go).
type redlockContender struct{ l *redlock.Locker }

func (c redlockContender) acquire(ctx context.Context, key string) (func(context.Context) error, error) {
	ls, err := c.l.Acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	return ls.Release, nil
}

// redsyncContender is redsync with its default retry delay (50-250 ms)
// and drift, a 30 s expiry like ours, and unbounded tries (its default
// 32 tries give up under k = 64).
type redsyncContender struct{ rs *redsync.Redsync }

func (c redsyncContender) acquire(ctx context.Context, key string) (func(context.Context) error, error) {
	m := c.rs.NewMutex(key, redsync.WithExpiry(30*time.Second), redsync.WithTries(math.MaxInt32))
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { _, err := m.UnlockContext(ctx); return err }, nil
}
