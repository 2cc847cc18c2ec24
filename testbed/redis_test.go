package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// TestMain checks, after all tests, that every container and network this
// process created has been removed and that no Proxy goroutine is left
// (the proxies of every node are closed and joined by the tests' cleanup).
func TestMain(m *testing.M) {
	code := m.Run()
	buf := make([]byte, 8<<20)
	if stacks := buf[:runtime.Stack(buf, true)]; bytes.Contains(stacks, []byte("testbed.(*Proxy)")) {
		fmt.Fprintf(os.Stderr, "testbed: Proxy goroutines left after the tests:\n%s\n", stacks)
		code = 1
	}
	if docker.cli != nil { // some test used Docker
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		left, err := Leftovers(ctx)
		cancel()
		switch {
		case err != nil:
			fmt.Fprintf(os.Stderr, "testbed: checking leftovers: %v\n", err)
			code = 1
		case len(left) > 0:
			fmt.Fprintf(os.Stderr, "testbed: resources left after the tests: %v\n", left)
			code = 1
		}
	}
	os.Exit(code)
}

// newClient connects to addr without retries, with timeouts taken from ctx.
func newClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                     addr,
		MaxRetries:               -1,
		DialTimeout:              time.Second,
		ReadTimeout:              2 * time.Second,
		WriteTimeout:             2 * time.Second,
		ContextTimeoutEnabled:    true,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func mustPing(t *testing.T, c *redis.Client) {
	t.Helper()
	if err := c.Ping(ctxT(t, 5*time.Second)).Err(); err != nil {
		t.Fatalf("PING %s: %v", c.Options().Addr, err)
	}
}

func TestRedisKillStartVolatile(t *testing.T) {
	RequireDocker(t)
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	nodes := StartRedis(t, 2, RedisOptions{})
	if len(nodes) != 2 || nodes[0].Name() != "redis-0" || nodes[1].Name() != "redis-1" {
		t.Fatalf("nodes: %v", nodes)
	}
	n0, n1 := nodes[0], nodes[1]
	c0, c1 := newClient(t, n0.Addr()), newClient(t, n1.Addr())
	mustPing(t, c0)
	mustPing(t, c1)
	if err := c0.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	addr, hostBefore := n0.Addr(), n0.HostAddr()
	if err := n0.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c0.Ping(ctxT(t, 2*time.Second)).Err(); err == nil {
		t.Fatal("PING succeeded on a killed node")
	}
	if err := n0.Admin().Ping(ctx).Err(); !errors.Is(err, ErrNodeDown) {
		t.Fatalf("Admin PING on a killed node: %v, want ErrNodeDown", err)
	}
	mustPing(t, c1) // the other master is unaffected

	if err := n0.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("host address before Kill %s, after Start %s; Addr %s", hostBefore, n0.HostAddr(), n0.Addr())
	if n0.Addr() != addr {
		t.Fatalf("Addr changed across restart: %s -> %s", addr, n0.Addr())
	}
	mustPing(t, c0)
	if err := c0.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET k after Kill+Start of a volatile node: %v, want redis.Nil", err)
	}
	if err := n0.Admin().Ping(ctx).Err(); err != nil {
		t.Fatalf("Admin after restart: %v", err)
	}

	// Graceful Stop loses volatile data too.
	if err := c0.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n0.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c0.Ping(ctxT(t, 2*time.Second)).Err(); err == nil {
		t.Fatal("PING succeeded on a stopped node")
	}
	if err := n0.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c0.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET k after Stop+Start of a volatile node: %v, want redis.Nil", err)
	}
}

func TestRedisFsyncAlwaysSurvivesKill(t *testing.T) {
	RequireDocker(t)
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	n := StartRedis(t, 1, RedisOptions{Persistence: "fsync-always"})[0]
	requireMount(t, n.Node, redisDataDir, mountVolume)
	c := newClient(t, n.Addr())
	if dir, err := c.ConfigGet(ctx, "dir").Result(); err != nil || dir["dir"] != redisDataDir {
		t.Fatalf("CONFIG GET dir: %v, %v; want the append-only file in %s", dir, err, redisDataDir)
	}
	if err := c.Set(ctx, "k", "durable", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(ctx); err != nil { // Kill + Start
		t.Fatal(err)
	}
	got, err := c.Get(ctx, "k").Result()
	if err != nil || got != "durable" {
		t.Fatalf("GET k after Kill+Start with fsync-always: %q, %v", got, err)
	}
}

func TestRedisPause(t *testing.T) {
	RequireDocker(t)
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	n := StartRedis(t, 1, RedisOptions{})[0]
	c := newClient(t, n.Addr())
	mustPing(t, c)

	if err := n.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := c.Ping(ctxT(t, 300*time.Millisecond)).Err()
	if el := time.Since(start); err == nil || el > 2*time.Second {
		t.Fatalf("PING on a paused node: %v after %v; want a timeout after 300ms", err, el)
	}
	t.Logf("PING on paused node: %v after %v", err, time.Since(start))
	if err := n.Unpause(ctx); err != nil {
		t.Fatal(err)
	}
	mustPing(t, c)

	left, err := Leftovers(ctx)
	if err != nil || len(left) == 0 {
		t.Fatalf("Leftovers while a node runs: %v, %v", left, err)
	}
	// End paused: the cleanup must still remove the container (TestMain
	// checks).
	if err := n.Pause(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRedisBadArgsFailsAndCleansUp(t *testing.T) {
	RequireDocker(t)
	t.Parallel()
	ftb := &fatalTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(fatalled); !ok {
					panic(r)
				}
			}
		}()
		StartRedis(ftb, 1, RedisOptions{Args: []string{"--no-such-directive", "1"}})
		t.Fatal("StartRedis with a bad directive succeeded")
	}()
	t.Logf("StartRedis failed as wanted: %s", ftb.msg)
	if !strings.Contains(ftb.msg, "exited") {
		t.Fatalf("failure does not say the container exited: %s", ftb.msg)
	}
	// TestMain checks that the failed container is removed.
}

func TestRedisLinkFaults(t *testing.T) {
	RequireDocker(t)
	t.Parallel()
	n := StartRedis(t, 1, RedisOptions{})[0]
	a, b := newClient(t, n.Link("a").Addr()), newClient(t, n.Link("b").Addr())
	if n.Link("a") != n.Link("a") || n.Link("a") == n.Link("b") {
		t.Fatal("Link must return one proxy per client name")
	}
	mustPing(t, a)
	mustPing(t, b)

	n.Link("a").Blackhole()
	if err := a.Ping(ctxT(t, 300*time.Millisecond)).Err(); err == nil {
		t.Fatal("PING through a blackholed link succeeded")
	}
	mustPing(t, b) // only a's link is partitioned
	n.Link("a").Heal()
	mustPing(t, a)

	n.Link("b").SetLatency(50 * time.Millisecond)
	start := time.Now()
	mustPing(t, b)
	if el := time.Since(start); el < 100*time.Millisecond {
		t.Fatalf("PING with 50ms latency each way took %v", el)
	}
}

func TestRedisCommands(t *testing.T) {
	RequireDocker(t)
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	n := StartRedis(t, 1, RedisOptions{})[0]
	c0, err := n.Commands(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := n.Commands(ctx); err != nil || again != c0 {
		t.Fatalf("Commands counts its own INFO: %d then %d (%v)", c0, again, err)
	}
	dialLink := func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", n.Addr())
	}
	for range 5 {
		if _, err := respDo(ctx, dialLink, "SET", "k", "v"); err != nil {
			t.Fatal(err)
		}
	}
	c1, err := n.Commands(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c1-c0 != 5 {
		t.Fatalf("Commands went from %d to %d after 5 SETs", c0, c1)
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := n.Commands(ctx); err != nil || c != 0 {
		t.Fatalf("Commands after restart = %d, %v; want 0", c, err)
	}
}

func TestRedisReplicatedPromote(t *testing.T) {
	RequireDocker(t)
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	r := StartRedisReplicated(t, RedisOptions{})
	before := newClient(t, r.Primary.Link("app").Addr()) // link made before failover
	if err := before.Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitValue(t, r.Replica.Admin(), "k", "v1")
	if err := r.Replica.Admin().Set(ctx, "x", "1", 0).Err(); err == nil {
		t.Fatal("replica accepted a write before Promote")
	}

	if err := r.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	after := newClient(t, r.Primary.Link("late").Addr()) // link made after failover
	for _, c := range []*redis.Client{before, newClient(t, r.Primary.Addr()), after} {
		key := "w:" + c.Options().Addr
		if err := c.Set(ctx, key, "new", 0).Err(); err != nil {
			t.Fatalf("write through primary's link %s after Promote: %v", c.Options().Addr, err)
		}
		if got, err := r.Replica.Admin().Get(ctx, key).Result(); err != nil || got != "new" {
			t.Fatalf("write through %s did not reach the promoted replica: %q, %v", c.Options().Addr, got, err)
		}
		if err := r.Primary.Admin().Get(ctx, key).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("write through %s reached the old primary: %v", c.Options().Addr, err)
		}
	}

	// The primary's links follow the promoted replica across its restart.
	if err := r.Replica.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := after.Set(ctx, "again", "1", 0).Err(); err != nil {
		// The first command may hit a connection reset by the restart.
		if err := after.Set(ctx, "again", "1", 0).Err(); err != nil {
			t.Fatalf("write through primary's link after replica restart: %v", err)
		}
	}
	if err := r.Replica.Admin().Get(ctx, "again").Err(); err != nil {
		t.Fatalf("write after restart not on the promoted replica: %v", err)
	}
}

func waitValue(t *testing.T, c *redis.Client, key, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := c.Get(context.Background(), key).Result()
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became %q: %q, %v", key, want, got, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fatalTB records Fatalf instead of ending the test.
type fatalTB struct {
	testing.TB
	msg string
}

type fatalled struct{}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(fatalled{})
}

func TestImageResolve(t *testing.T) {
	RequireDocker(t)
	local := Images.Redis.Local
	if os.Getenv(Images.Redis.Env) == "" {
		t.Logf("%s unset: redis image resolves to %s", Images.Redis.Env, Images.Redis.Resolve(t))
	}

	t.Setenv("DISTLOCK_TESTBED_TEST_IMAGE", "")
	im := Image{Env: "DISTLOCK_TESTBED_TEST_IMAGE", Default: "distlock/absent:0", Local: local}
	if got := im.Resolve(t); got != local {
		t.Fatalf("Default absent, Local present: got %q, want %q", got, local)
	}
	t.Setenv("DISTLOCK_TESTBED_TEST_IMAGE", "my/override:1")
	if got := im.Resolve(t); got != "my/override:1" {
		t.Fatalf("with env override: got %q", got)
	}

	t.Setenv("DISTLOCK_TESTBED_TEST_IMAGE", "")
	im.Local = "distlock/absent:1"
	ftb := &fatalTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(fatalled); !ok {
					panic(r)
				}
			}
		}()
		got := im.Resolve(ftb)
		t.Fatalf("neither image present: got %q, want Fatalf", got)
	}()
	if !strings.Contains(ftb.msg, "run scripts/images.sh (make images)") {
		t.Fatalf("Fatalf message %q does not say how to build the images", ftb.msg)
	}
}
