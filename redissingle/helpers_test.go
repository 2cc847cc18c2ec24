package redissingle_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.uber.org/goleak"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/redissingle"
	"github.com/distlock/distlock/testbed"
)

// TestMain checks that no goroutine of ours (subscribers, clean-ups,
// requests abandoned on ctx, watchdogs) outlives the tests. The Docker
// client's idle HTTP connections are not ours, nor go-redis's own dial
// back-off goroutine (after a failed dial it sleeps 1 s, then sees the
// closed pool and exits; Client.Close does not wait for it).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// server is one Redis in a container for a test.
type server struct {
	node *testbed.RedisNode
}

// startRedis starts a volatile Redis for t, or skips t under -short or
// without Docker.
func startRedis(t *testing.T) *server {
	t.Helper()
	testbed.RequireDocker(t)
	return &server{node: testbed.StartRedis(t, 1, testbed.RedisOptions{})[0]}
}

// newClient returns a client to addr, closed when the test ends.
func newClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                     addr,
		DialTimeout:              time.Second,
		DialerRetries:            1,
		ReadTimeout:              2 * time.Second,
		WriteTimeout:             2 * time.Second,
		DisableIdentity:          true, // CLIENT SETINFO needs Redis 7.2
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// locker returns a Locker over a new client to s through link, closed when
// the test ends.
func (s *server) locker(t testing.TB, link string, opts *redissingle.Options) *redissingle.Locker {
	t.Helper()
	l, err := redissingle.New(newClient(t, s.node.Link(link).Addr()), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// admin is a client straight to the server.
func (s *server) admin() *redis.Client { return s.node.Admin() }

// keysMatching lists the server's keys matching pattern (SCAN).
func (s *server) keysMatching(t testing.TB, pattern string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []string
	iter := s.admin().Scan(ctx, 0, pattern, 100).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN %s: %v", pattern, err)
	}
	slices.Sort(out)
	return out
}

// leftovers lists the keys of key (its lock and wait queue) still on the
// server; the fence counter is not one of them.
func (s *server) leftovers(t testing.TB, key string) []string {
	t.Helper()
	var out []string
	for _, k := range s.keysMatching(t, "*"+key+"*") {
		if !strings.HasSuffix(k, "fence") {
			out = append(out, k)
		}
	}
	return out
}

// noLeftovers fails t if key's lock or wait queue is still on s.
func (s *server) noLeftovers(t testing.TB, key string) {
	t.Helper()
	if left := s.leftovers(t, key); len(left) > 0 {
		t.Fatalf("keys left: %v", left)
	}
}

// acquireAsync runs l.Acquire(ctx, key, opts...) on a goroutine. The
// channel receives the lease, or nil once the error is reported with
// t.Errorf.
func acquireAsync(t testing.TB, ctx context.Context, l distlock.Locker, key string, opts ...distlock.Option) <-chan distlock.Lease {
	got := make(chan distlock.Lease, 1)
	go func() {
		ls, err := l.Acquire(ctx, key, opts...)
		if err != nil {
			t.Errorf("Acquire of %q: %v", key, err)
		}
		got <- ls
	}()
	return got
}

// Shared helpers (internal/locktest), under the names the tests use.
var (
	uniqueKey   = locktest.UniqueKey
	eventually  = locktest.Eventually
	mustAcquire = locktest.MustAcquire
	mustRelease = locktest.MustRelease
	wantErr     = locktest.WantErr
)
