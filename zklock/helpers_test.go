package zklock_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/testbed"
	"github.com/distlock/distlock/zklock"
)

// TestMain checks that no goroutine of ours or go-zookeeper's outlives
// the tests. The Docker client's idle HTTP connections are not ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// TestLocker runs the functional tests on one 3-server ensemble.
func TestLocker(t *testing.T) {
	e := startEnsemble(t)
	for _, tc := range []struct {
		name string
		f    func(*testing.T, *ensemble)
	}{
		{"TryAcquire", testTryAcquire},
		{"FenceAcrossParents", testFenceAcrossParents},
		{"FIFOWithoutHerd", testFIFO},
		{"CancelledWaiterLeavesNoNode", testCancel},
		{"Revoked", testRevoked},
		{"DeletedBeforeGrant", testDeletedBeforeGrant},
		{"ExpiresWithoutExtension", testExpiry},
		{"AutoExtend", testAutoExtend},
		{"ExtendAfterLoss", testExtendAfterLoss},
		{"ParentsDoNotAccumulate", testParents},
		{"SessionPerTTL", testSessionPerTTL},
		{"MultiIfHeld", testMultiIfHeld},
		{"Close", testClose},
		{"CloseDuringExtension", testCloseDuringExtension},
		{"InvalidArguments", testInvalid},
		{"HostileKeys", testHostileKeys},
		{"CauseContexts", testCauseContexts},
		{"OpenByURL", testURL},
		{"TickTime", testTickTime},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, e) })
	}
}

// ensemble is a 3-server ZooKeeper with an admin session that reaches it
// through its own, never faulted, links.
type ensemble struct {
	*testbed.ZooKeeperEnsemble
	admin *zk.Conn
}

func startEnsemble(t *testing.T) *ensemble {
	t.Helper()
	testbed.RequireDocker(t)
	e := &ensemble{ZooKeeperEnsemble: testbed.StartZooKeeperEnsemble(t, 3, testbed.ZooKeeperOptions{})}
	e.admin = connect(t, e.Addrs("admin"))
	return e
}

type noLog struct{}

func (noLog) Printf(string, ...any) {}

// connect opens a plain go-zookeeper session, closed (and its goroutine
// joined) when t ends.
func connect(t testing.TB, addrs []string) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect(addrs, 10*time.Second, zk.WithLogger(noLog{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		for range events {
		}
	})
	return c
}

// testbedTick is the tickTime of the testbed's ensembles unless a test
// sets its own.
const testbedTick = 250 * time.Millisecond

// withTick returns opts (nil: the defaults) with TickTime testbedTick if
// it is not set.
func withTick(opts *zklock.Options) *zklock.Options {
	var o zklock.Options
	if opts != nil {
		o = *opts
	}
	if o.TickTime == 0 {
		o.TickTime = testbedTick
	}
	return &o
}

// locker returns a Locker whose every server link is named client, with
// the testbed's tick time unless opts sets one, closed when t ends.
func (e *ensemble) locker(t testing.TB, client string, opts *zklock.Options) *zklock.Locker {
	t.Helper()
	l, err := zklock.New(e.Addrs(client), withTick(opts))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// blackhole cuts (or with heal, restores) client's links to every server.
func (e *ensemble) blackhole(client string, heal bool) {
	for _, p := range e.Links(client) {
		if heal {
			p.Heal()
		} else {
			p.Blackhole()
		}
	}
}

// lockNodes lists the lock nodes of key in queue order, none if the
// parent is gone.
func (e *ensemble) lockNodes(t testing.TB, key string) []string {
	t.Helper()
	children, _, err := e.admin.Children(zklock.DefaultPrefix + "/" + key)
	if err == zk.ErrNoNode {
		return nil
	}
	if err != nil {
		t.Fatalf("children of %s: %v", key, err)
	}
	sort.Slice(children, func(i, j int) bool { // queue order: by sequence number
		return children[i][len(children[i])-10:] < children[j][len(children[j])-10:]
	})
	return children
}

// exists reports whether path exists.
func (e *ensemble) exists(t testing.TB, path string) bool {
	t.Helper()
	ok, _, err := e.admin.Exists(path)
	if err != nil {
		t.Fatalf("exists %s: %v", path, err)
	}
	return ok
}

// watches sums the watches every server holds (4lw wchs "Total watches:").
func (e *ensemble) watches(t testing.TB) int {
	t.Helper()
	total := 0
	for _, n := range e.Nodes {
		out, err := n.FourLetter(context.Background(), "wchs")
		if err != nil {
			t.Fatalf("wchs: %v", err)
		}
		i := strings.Index(out, "Total watches:")
		if i < 0 {
			t.Fatalf("wchs: %q", out)
		}
		var k int
		for _, c := range strings.TrimSpace(out[i+len("Total watches:"):]) {
			if c < '0' || c > '9' {
				break
			}
			k = 10*k + int(c-'0')
		}
		total += k
	}
	return total
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
