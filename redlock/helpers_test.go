package redlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/redlock"
	"github.com/distlock/distlock/testbed"
)

// TestMain checks that no goroutine of ours (subscribers, clean-ups,
// watchdogs) outlives the tests. The Docker client's idle HTTP
// connections are not ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// cluster is 5 independent Redis masters.
type cluster struct {
	nodes []*testbed.RedisNode
}

func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	testbed.RequireDocker(t)
	return &cluster{nodes: testbed.StartRedis(t, n, testbed.RedisOptions{})}
}

// addrs returns the nodes' addresses through the links named link.
func (c *cluster) addrs(link string) []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Link(link).Addr()
	}
	return out
}

// locker returns a Locker over the links named link, closed when t ends.
func (c *cluster) locker(t testing.TB, link string, opts *redlock.Options) *redlock.Locker {
	t.Helper()
	l, err := redlock.New(c.addrs(link), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// holders lists the indexes of the nodes where key exists.
func (c *cluster) holders(t testing.TB, key string) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []int
	for i, n := range c.nodes {
		k, err := n.Admin().Exists(ctx, key).Result()
		if err != nil && strings.Contains(err.Error(), "node is down") {
			continue // killed: holds nothing
		}
		if err != nil {
			t.Fatalf("EXISTS on node %d: %v", i, err)
		}
		if k > 0 {
			out = append(out, i)
		}
	}
	return out
}

// values returns key's value on every node ("" if missing).
func (c *cluster) values(t testing.TB, key string) []string {
	t.Helper()
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Admin().Get(context.Background(), key).Val()
	}
	return out
}

// Shared helpers (internal/locktest), under the names the tests use.
var (
	uniqueKey   = locktest.UniqueKey
	eventually  = locktest.Eventually
	mustAcquire = locktest.MustAcquire
	mustRelease = locktest.MustRelease
	wantErr     = locktest.WantErr
	notErr      = locktest.NotErr
)

// TestRedlock runs every scenario on one set of 5 masters: first the
// healthy ones in parallel, then the faults one at a time.
func TestRedlock(t *testing.T) {
	c := startCluster(t, 5)
	t.Run("Healthy", func(t *testing.T) {
		t.Run("AcquireReleaseContention", c.testAcquireReleaseContention)
		t.Run("FenceIncreasing", c.testFenceIncreasing)
		t.Run("ReleaseRaisesCounter", c.testReleaseRaisesCounter)
		t.Run("Exclusion", c.testExclusion)
		t.Run("PushWakeup", c.testPushWakeup)
		t.Run("SplitContention", c.testSplitContention)
		t.Run("ReleaseAfterExpiry", c.testReleaseAfterExpiry)
		t.Run("ExtendAfterExpiry", c.testExtendAfterExpiry)
		t.Run("Watchdog", c.testWatchdog)
		t.Run("Cancelled", c.testCancelled)
		t.Run("Closed", c.testClosed)
		t.Run("LocalTurns", c.testLocalTurns)
		t.Run("HostileKeys", c.testHostileKeys)
	})
	t.Run("Faults", func(t *testing.T) {
		t.Run("FencePausedBeforeWriteBack", c.testFencePausedBeforeWriteBack)
		t.Run("CancelledWaiterLeaves", c.testCancelledWaiterLeaves)
		t.Run("WakeSkipsGoneWaiter", c.testWakeSkipsGoneWaiter)
		t.Run("ReleaseRetried", c.testReleaseRetried)
		t.Run("ReleaseRetryBounded", c.testReleaseRetryBounded)
		t.Run("ReleaseRetryAfterExtend", c.testReleaseRetryAfterExtend)
		t.Run("ReleaseRetryLate", c.testReleaseRetryLate)
		t.Run("TwoKilled", c.testTwoKilled)
		t.Run("ThreeKilled", c.testThreeKilled)
		t.Run("Paused", c.testPaused)
		t.Run("LatencyOnMajority", c.testLatencyOnMajority)
		t.Run("LatencyFreshConnections", c.testLatencyFreshConnections)
	})
}
