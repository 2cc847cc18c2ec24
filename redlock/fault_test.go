package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redlock"
	"github.com/distlock/distlock/testbed"
)

// nodeTimeout is the default per-node timeout at the default 30 s TTL.
const nodeTimeout = redlock.DefaultNodeTimeout

// slack is what a loaded 2-core host adds to a bounded operation.
const slack = 300 * time.Millisecond

func (c *cluster) kill(t *testing.T, idx ...int) {
	t.Helper()
	ctx := context.Background()
	for _, i := range idx {
		if err := c.nodes[i].Kill(ctx); err != nil {
			t.Fatalf("kill node %d: %v", i, err)
		}
	}
	t.Cleanup(func() {
		for _, i := range idx {
			if err := c.nodes[i].Start(ctx); err != nil {
				t.Errorf("start node %d: %v", i, err)
			}
		}
	})
}

// timed runs acquire+release and returns how long each took.
func timed(t *testing.T, l distlock.Locker, key string) (acq, rel time.Duration) {
	t.Helper()
	start := time.Now()
	ls, err := l.TryAcquire(context.Background(), key)
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	acq = time.Since(start)
	start = time.Now()
	mustRelease(t, ls)
	return acq, time.Since(start)
}

// cutLinks makes the links named link of nodes reset their connections
// and close new ones at once. The returned func restores them (and heals
// any latency set on them); it runs at most once, and when t ends if not
// before.
func cutLinks(t *testing.T, link string, nodes []*testbed.RedisNode) (restore func()) {
	targets := make([]string, len(nodes))
	for i, n := range nodes {
		targets[i] = n.Link(link).Target()
		n.Link(link).SetTarget("")
	}
	var once sync.Once
	restore = func() {
		once.Do(func() {
			for i, n := range nodes {
				n.Link(link).Heal()
				n.Link(link).SetTarget(targets[i])
			}
		})
	}
	t.Cleanup(restore)
	return restore
}

func (c *cluster) testTwoKilled(t *testing.T) {
	l := c.locker(t, "a", nil)
	mustRelease(t, mustAcquire(t, l, uniqueKey(t))) // connections up
	c.kill(t, 0, 1)
	for range 5 {
		acq, rel := timed(t, l, uniqueKey(t))
		t.Logf("2 of 5 down: acquire %v, release %v", acq, rel)
		if acq > nodeTimeout+slack || rel > nodeTimeout+slack {
			t.Fatalf("acquire %v, release %v: more than the node timeout", acq, rel)
		}
	}
	ls := mustAcquire(t, l, uniqueKey(t), distlock.WithTTL(time.Second), distlock.WithAutoExtend(0))
	time.Sleep(1500 * time.Millisecond)
	if err := ls.Err(); err != nil {
		t.Fatalf("watchdog with 2 nodes down: %v", err)
	}
	mustRelease(t, ls)
}

func (c *cluster) testThreeKilled(t *testing.T) {
	l := c.locker(t, "a", nil)
	mustRelease(t, mustAcquire(t, l, uniqueKey(t)))
	c.kill(t, 0, 1, 2)
	key := uniqueKey(t)
	start := time.Now()
	_, err := l.TryAcquire(context.Background(), key)
	d := time.Since(start)
	t.Logf("3 of 5 down: %v after %v", err, d)
	wantErr(t, err, distlock.ErrUnavailable)
	notErr(t, err, distlock.ErrNotAcquired)
	if d > nodeTimeout+slack {
		t.Fatalf("TryAcquire took %v", d)
	}
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || qe.Acquired != 2 || len(qe.Nodes) != 3 {
		t.Fatalf("error %v, want a *QuorumError with 2 acquired and 3 failed nodes", err)
	}
	for i, ne := range qe.Nodes {
		if ne.Node != c.nodes[i].Link("a").Addr() || !errors.Is(ne, distlock.ErrUnavailable) {
			t.Fatalf("node error %d: %v, want node %s unavailable", i, ne, c.nodes[i].Link("a").Addr())
		}
	}
	if msg := err.Error(); !strings.Contains(msg, c.nodes[2].Link("a").Addr()) {
		t.Fatalf("message %q does not name the down nodes", msg)
	}
	if h := c.holders(t, key); len(h) > 0 {
		t.Fatalf("failed acquisition left the key on nodes %v", h)
	}
	// A blocking Acquire keeps trying and succeeds once the nodes are back.
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ls, err := l.Acquire(ctx, key)
		if err == nil {
			err = ls.Release(context.Background())
		}
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	for _, i := range []int{0, 1, 2} {
		if err := c.nodes[i].Start(context.Background()); err != nil {
			t.Fatalf("start node %d: %v", i, err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("Acquire across recovery: %v", err)
	}
}

func (c *cluster) testPaused(t *testing.T) {
	l := c.locker(t, "a", nil)
	mustRelease(t, mustAcquire(t, l, uniqueKey(t)))
	ctx := context.Background()
	if err := c.nodes[3].Pause(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.nodes[3].Unpause(ctx); err != nil {
			t.Error(err)
		}
	}()
	for range 3 {
		acq, rel := timed(t, l, uniqueKey(t))
		t.Logf("1 node frozen: acquire %v, release %v", acq, rel)
		if acq > nodeTimeout+slack || rel > nodeTimeout+slack {
			t.Fatalf("acquire %v, release %v: more than the node timeout", acq, rel)
		}
	}
}

// testLatencyOnMajority: the links of 3 nodes delay by more than the TTL.
// The acquisition fails, and the late clean-up deletes the keys the slow
// nodes set when the requests finally reach them, long before their TTL.
func (c *cluster) testLatencyOnMajority(t *testing.T) {
	l := c.locker(t, "slow", nil)
	mustRelease(t, mustAcquire(t, l, uniqueKey(t)))
	const ttl, latency = time.Second, 1200 * time.Millisecond
	for _, i := range []int{0, 2, 4} {
		c.nodes[i].Link("slow").SetLatency(latency)
	}
	defer func() {
		for _, i := range []int{0, 2, 4} {
			c.nodes[i].Link("slow").Reset()
			c.nodes[i].Link("slow").Heal()
		}
	}()
	key := uniqueKey(t)
	start := time.Now()
	_, err := l.TryAcquire(context.Background(), key, distlock.WithTTL(ttl))
	t.Logf("latency %v on 3 of 5: %v after %v", latency, err, time.Since(start))
	wantErr(t, err, distlock.ErrUnavailable)
	if h := c.holders(t, key); len(h) > 0 {
		t.Fatalf("key on nodes %v right after the failure", h)
	}
	// The SETs reach the slow nodes at ~latency and would live until
	// ~latency + ttl; the pipelined unlock follows them.
	for time.Since(start) < latency+ttl/2 {
		if h := c.holders(t, key); len(h) > 0 && time.Since(start) > latency+200*time.Millisecond {
			t.Fatalf("key on nodes %v at %v", h, time.Since(start))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testLatencyFreshConnections: every link delays by 15 ms each way, so a
// round trip (30 ms) fits the node timeout (50 ms at a 1 s TTL), but not
// two. An operation that has to open a connection to a node must still
// cost that node one round trip: the acquisition of a Locker without
// connections holds every node, and a Release that finds no idle
// connection (another is in flight) has deleted the key on every node
// when it returns (scenario S24 in docs/conformance.md: no key is left
// behind while its release is still on its way).
func (c *cluster) testLatencyFreshConnections(t *testing.T) {
	const ttl, latency = time.Second, 15 * time.Millisecond
	for _, n := range c.nodes {
		n.Link("fresh").SetLatency(latency)
	}
	defer func() {
		for _, n := range c.nodes {
			n.Link("fresh").Heal()
		}
	}()
	l := c.locker(t, "fresh", nil) // no connection yet
	ctx := context.Background()
	keys := []string{uniqueKey(t), uniqueKey(t)}
	var leases []distlock.Lease
	for _, key := range keys {
		start := time.Now()
		ls, err := l.TryAcquire(ctx, key, distlock.WithTTL(ttl))
		if err != nil {
			t.Fatalf("TryAcquire %s after %v over %v links: %v", key, time.Since(start), latency, err)
		}
		for i, v := range c.values(t, key) {
			if v != ls.Token() {
				t.Fatalf("node %d holds %q, want the token %q: it did not answer in time", i, v, ls.Token())
			}
		}
		leases = append(leases, ls)
	}
	// Both at once: one of them has to open a new connection to each node.
	var wg sync.WaitGroup
	errs := make([]error, len(leases))
	for i, ls := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = ls.Release(ctx)
		}()
	}
	wg.Wait()
	for i, key := range keys {
		if errs[i] != nil {
			t.Fatalf("Release %s: %v", key, errs[i])
		}
		if h := c.holders(t, key); len(h) > 0 {
			t.Fatalf("Release %s returned with the key still on nodes %v", key, h)
		}
	}
}
