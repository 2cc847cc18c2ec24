package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/redlock"
)

// TestInspect runs the Inspector contract and the Redlock-specific
// inspection scenarios on 3 masters of their own.
func TestInspect(t *testing.T) {
	c := startCluster(t, 3)
	t.Run("Contract", func(t *testing.T) {
		a, b, closed := c.locker(t, "a", nil), c.locker(t, "b", nil), c.locker(t, "closed", nil)
		// Fence is not kept per key, labels are not stored, and a lease
		// that is not extended learns of nothing before its deadline.
		locktest.Inspector(t, a, b, closed, locktest.InspectTraits{
			HolderIsTokenID: true,
			TTLBased:        true,
			Queues:          true,
			MonotonicFence:  true,
		})
	})
	t.Run("PerNode", c.testInspectPerNode)
	t.Run("Silent", c.testInspectSilent)
	t.Run("Leak", c.testInspectLeak)
	t.Run("ListPages", c.testListPages)
	t.Run("ListPrefix", c.testListPrefix)
	t.Run("ForceReleaseNodeDown", c.testForceReleaseNodeDown)
	t.Run("ForceReleaseLostReplies", c.testForceReleaseLostReplies)
	t.Run("ForceReleaseNoQuorum", c.testForceReleaseNoQuorum)
	t.Run("ForceReleaseWakes", c.testForceReleaseWakes)
}

func ctx5(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testInspectPerNode: a key deleted on one node by hand shows in that
// node's view only; the quorum still holds it, until a second node loses
// it.
func (c *cluster) testInspectPerNode(t *testing.T) {
	l := c.locker(t, "pernode", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, l, key, distlock.WithTTL(10*time.Second))
	if err := c.nodes[1].Admin().Del(ctx5(t), key).Err(); err != nil {
		t.Fatal(err)
	}
	info := locktest.MustInspect(t, l, key)
	if len(info.Nodes) != 3 {
		t.Fatalf("Nodes has %d entries, want 3", len(info.Nodes))
	}
	if n := info.Nodes[1]; n.Key != key || n.Held || n.Holder != "" || n.TTL != 0 {
		t.Fatalf("node 1 (key deleted) reported %+v", n)
	}
	id := distlock.HolderID(ls.Token())
	for _, i := range []int{0, 2} {
		if n := info.Nodes[i]; !n.Held || n.Holder != id || n.TTL <= 0 || n.TTL > 10*time.Second || n.Leak != "" {
			t.Fatalf("node %d reported %+v, want held by %s", i, n, id)
		}
	}
	if !info.Held || info.Holder != id || info.TTL <= 0 || info.TTL > 10*time.Second || info.Leak != "" || info.Fence != 0 {
		t.Fatalf("quorum view with 2 of 3 nodes holding: %+v", info)
	}
	if err := c.nodes[2].Admin().Del(ctx5(t), key).Err(); err != nil {
		t.Fatal(err)
	}
	info = locktest.MustInspect(t, l, key)
	if info.Held || info.Holder != "" || info.TTL != 0 || !info.Nodes[0].Held {
		t.Fatalf("quorum view with 1 of 3 nodes holding: %+v", info)
	}
	wantErr(t, ls.Release(ctx5(t)), distlock.ErrLeaseLost)

	// Waiters: the count a majority of nodes reach.
	queue := "distlock:q:" + key
	for i, n := range c.nodes[:2] {
		for j := range 2 - i { // node 0: 2 entries, node 1: 1
			if err := n.Admin().ZAdd(ctx5(t), queue, redis.Z{Score: float64(j), Member: fmt.Sprintf("nobody|%x", j)}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		n.Admin().Expire(ctx5(t), queue, 10*time.Second)
	}
	info = locktest.MustInspect(t, l, key)
	if info.Waiters != 1 || info.Nodes[0].Waiters != 2 || info.Nodes[1].Waiters != 1 || info.Nodes[2].Waiters != 0 {
		t.Fatalf("queues of 2, 1 and 0 entries reported %d at the top, %d, %d, %d per node",
			info.Waiters, info.Nodes[0].Waiters, info.Nodes[1].Waiters, info.Nodes[2].Waiters)
	}
}

// testInspectSilent: a node that does not answer has the zero entry in
// Nodes; with two silent the call fails with ErrUnavailable within the
// node timeout.
func (c *cluster) testInspectSilent(t *testing.T) {
	l := c.locker(t, "silent", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, l, key, distlock.WithTTL(10*time.Second))
	defer mustRelease(t, ls)
	c.nodes[2].Link("silent").Blackhole()
	defer c.nodes[2].Link("silent").Heal()
	info := locktest.MustInspect(t, l, key)
	if n := info.Nodes[2]; n.Key != "" || n.Held || n.Holder != "" || !info.Held || info.Holder != distlock.HolderID(ls.Token()) {
		t.Fatalf("with node 2 silent: %+v", info)
	}
	c.nodes[1].Link("silent").Blackhole()
	defer c.nodes[1].Link("silent").Heal()
	start := time.Now()
	_, err := distlock.Inspect(context.Background(), l, key)
	elapsed := time.Since(start)
	wantErr(t, err, distlock.ErrUnavailable)
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || qe.Acquired != 1 || qe.Needed != 2 || len(qe.Nodes) != 2 {
		t.Fatalf("Inspect with 2 of 3 silent: %v, want a QuorumError 1 of 2 naming both", err)
	}
	if elapsed > nodeTimeout+slack {
		t.Fatalf("Inspect with 2 of 3 silent took %v", elapsed)
	}
	c.nodes[1].Link("silent").Heal()
	c.nodes[2].Link("silent").Heal()
}

// testInspectLeak: a key set by hand without expiry on one node, and one
// of another type on a second, are leaks that Inspect and List report and
// ForceRelease clears; a copy without expiry under a quorum holder is
// reported too, and does not stretch the quorum's TTL.
func (c *cluster) testInspectLeak(t *testing.T) {
	l := c.locker(t, "leak", &redlock.Options{Prefix: "leak/"})
	key := uniqueKey(t)
	ctx := ctx5(t)
	if err := c.nodes[0].Admin().Set(ctx, "leak/"+key, "by-hand", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[1].Admin().HSet(ctx, "leak/"+key, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	info := locktest.MustInspect(t, l, key)
	n0, n1 := info.Nodes[0], info.Nodes[1]
	if !n0.Held || n0.TTL != distlock.NoExpiry || n0.Holder != distlock.HolderID("by-hand") || !strings.Contains(n0.Leak, "no expiry") {
		t.Fatalf("node 0 (string without expiry) reported %+v", n0)
	}
	if !n1.Held || n1.Holder != "" || !strings.Contains(n1.Leak, "hash") {
		t.Fatalf("node 1 (a hash) reported %+v", n1)
	}
	if info.Held || info.TTL != distlock.NoExpiry || !strings.Contains(info.Leak, c.nodes[0].Link("leak").Addr()) ||
		!strings.Contains(info.Leak, c.nodes[1].Link("leak").Addr()) {
		t.Fatalf("quorum view of the leaks: %+v", info)
	}
	page, err := distlock.List(ctx, l, key, distlock.Page{})
	if err != nil || len(page.Locks) != 1 || page.Locks[0].Key != key || page.Locks[0].Leak == "" {
		t.Fatalf("List(%q) = %+v, %v; want the leaked key", key, page, err)
	}
	held, err := distlock.ForceRelease(ctx, l, key)
	if err != nil || held {
		t.Fatalf("ForceRelease of leaks = %v, %v; want false, nil", held, err)
	}
	if h := c.holders(t, "leak/"+key); len(h) != 0 {
		t.Fatalf("after ForceRelease the key is on nodes %v", h)
	}
	if info := locktest.MustInspect(t, l, key); info.Leak != "" || slices.ContainsFunc(info.Nodes, func(n distlock.LockInfo) bool { return n.Held }) {
		t.Fatalf("after ForceRelease: %+v", info)
	}

	ls := mustAcquire(t, l, key, distlock.WithTTL(10*time.Second))
	defer mustRelease(t, ls)
	if err := c.nodes[2].Admin().Persist(ctx, "leak/"+key).Err(); err != nil {
		t.Fatal(err)
	}
	info = locktest.MustInspect(t, l, key)
	if !info.Held || info.TTL <= 0 || info.TTL > 10*time.Second || !strings.Contains(info.Leak, "no expiry") || info.Nodes[2].TTL != distlock.NoExpiry {
		t.Fatalf("held with one copy persisted: %+v", info)
	}
}

// testListPages: 40 keys walked 3 at a time come out once each, in key
// order, each held on every node, and the Locker's own keys never show.
func (c *cluster) testListPages(t *testing.T) {
	l := c.locker(t, "pages", &redlock.Options{Prefix: "pg/"})
	base := uniqueKey(t) + "/"
	ctx := ctx5(t)
	var want []string
	for j := range 40 {
		k := fmt.Sprintf("%sk%02d", base, j)
		want = append(want, k)
		for _, n := range c.nodes {
			if err := n.Admin().Set(ctx, "pg/"+k, "tok", 10*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The Locker's own keys (fence counter, a wait queue) under the same
	// names, and a lock of another Prefix.
	mustRelease(t, mustAcquire(t, l, base+"k00x"))
	for _, n := range c.nodes {
		if err := n.Admin().Set(ctx, "pg/"+base+"distlock:x", "tok", 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	page := distlock.Page{Limit: 3}
	for i := 0; ; i++ {
		if i > 20 {
			t.Fatalf("List did not end after %d pages: %v", i, got)
		}
		lst, err := distlock.List(ctx, l, base, page)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		for _, info := range lst.Locks {
			if !info.Held || info.Holder != distlock.HolderID("tok") || len(info.Nodes) != 3 {
				t.Fatalf("listed %+v", info)
			}
			got = append(got, info.Key)
		}
		if lst.Next == "" {
			break
		}
		page.Cursor = lst.Next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages gave %v, want %v", got, want)
	}
	all, err := distlock.List(ctx, c.locker(t, "pages", nil), "", distlock.Page{Limit: distlock.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range all.Locks {
		if strings.Contains(info.Key, "distlock:") {
			t.Fatalf("List listed the Locker's own key %q", info.Key)
		}
	}
}

// testListPrefix: glob characters in a prefix match only themselves.
func (c *cluster) testListPrefix(t *testing.T) {
	l := c.locker(t, "prefix", nil)
	base := uniqueKey(t) + "/"
	for _, k := range []string{"x[1]*", "x1", "x\\1", "y?"} {
		ls := mustAcquire(t, l, base+k, distlock.WithTTL(10*time.Second))
		defer mustRelease(t, ls)
	}
	for prefix, want := range map[string]string{
		"":     "x1,x[1]*,x\\1,y?",
		"x[":   "x[1]*",
		"x[1]": "x[1]*",
		"x\\":  "x\\1",
		"y?":   "y?",
		"x*":   "",
		"?":    "",
	} {
		lst, err := distlock.List(ctx5(t), l, base+prefix, distlock.Page{})
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		var got []string
		for _, info := range lst.Locks {
			got = append(got, strings.TrimPrefix(info.Key, base))
		}
		if strings.Join(got, ",") != want {
			t.Fatalf("List(base+%q) = %q, want %q", prefix, got, want)
		}
	}
}

// testForceReleaseNodeDown: with one node unreachable, ForceRelease frees
// the key on the others within two node timeouts, and the next Acquire,
// through the same unreachable node, succeeds.
func (c *cluster) testForceReleaseNodeDown(t *testing.T) {
	l := c.locker(t, "down", nil)
	key := uniqueKey(t)
	old := mustAcquire(t, l, key, distlock.WithTTL(10*time.Second))
	c.nodes[2].Link("down").Blackhole()
	defer c.nodes[2].Link("down").Heal()
	start := time.Now()
	held, err := distlock.ForceRelease(context.Background(), l, key)
	elapsed := time.Since(start)
	if err != nil || !held {
		t.Fatalf("ForceRelease with node 2 unreachable = %v, %v; want true, nil", held, err)
	}
	if elapsed > 2*nodeTimeout+slack {
		t.Fatalf("ForceRelease with node 2 unreachable took %v", elapsed)
	}
	if h := c.holders(t, key); !slices.Equal(h, []int{2}) {
		t.Fatalf("after ForceRelease the key is on nodes %v, want only the unreachable 2", h)
	}
	next := mustAcquire(t, c.locker(t, "down", nil), key, distlock.WithTTL(10*time.Second))
	wantErr(t, old.Release(ctx5(t)), distlock.ErrLeaseLost)
	c.nodes[2].Link("down").Heal()
	mustRelease(t, next)
}

// testForceReleaseLostReplies: a node whose replies are lost is sent the
// delete of the value the others hold, and it lands there.
func (c *cluster) testForceReleaseLostReplies(t *testing.T) {
	l := c.locker(t, "lost", nil)
	key := uniqueKey(t)
	old := mustAcquire(t, l, key, distlock.WithTTL(10*time.Second))
	c.nodes[2].Link("lost").DropReplies()
	defer c.nodes[2].Link("lost").Heal()
	held, err := distlock.ForceRelease(ctx5(t), l, key)
	if err != nil || !held {
		t.Fatalf("ForceRelease with node 2's replies lost = %v, %v; want true, nil", held, err)
	}
	eventually(t, time.Second, "the key stayed on the node whose replies were lost", func() bool {
		return len(c.holders(t, key)) == 0
	})
	c.nodes[2].Link("lost").Heal()
	wantErr(t, old.Release(ctx5(t)), distlock.ErrLeaseLost)
}

// testForceReleaseNoQuorum: with two of three nodes unreachable,
// ForceRelease deletes the key where it can and says how many answered.
func (c *cluster) testForceReleaseNoQuorum(t *testing.T) {
	l := c.locker(t, "noquorum", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, l, key, distlock.WithTTL(10*time.Second))
	defer ls.Release(ctx5(t)) //nolint:errcheck // force-released: ErrLeaseLost
	for _, n := range c.nodes[1:] {
		n.Link("noquorum").Blackhole()
		defer n.Link("noquorum").Heal()
	}
	start := time.Now()
	_, err := distlock.ForceRelease(context.Background(), l, key)
	elapsed := time.Since(start)
	wantErr(t, err, distlock.ErrUnavailable)
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || qe.Op != "force release" || qe.Acquired != 1 || qe.Needed != 2 || !strings.Contains(err.Error(), "1 of 2") {
		t.Fatalf("ForceRelease with 2 of 3 unreachable: %v, want a QuorumError 1 of 2", err)
	}
	if elapsed > 2*nodeTimeout+slack {
		t.Fatalf("ForceRelease with 2 of 3 unreachable took %v", elapsed)
	}
	if h := c.holders(t, key); !slices.Equal(h, []int{1, 2}) {
		t.Fatalf("after ForceRelease the key is on nodes %v, want the unreachable 1 and 2", h)
	}
	for _, n := range c.nodes[1:] {
		n.Link("noquorum").Heal()
	}
}

// testForceReleaseWakes: a blocked Acquire, whose poll is 30 s away, is
// woken by ForceRelease at once, as by a release.
func (c *cluster) testForceReleaseWakes(t *testing.T) {
	a := c.locker(t, "wake-a", nil)
	b := c.locker(t, "wake-b", &redlock.Options{PollInterval: 30 * time.Second})
	key := uniqueKey(t)
	old := mustAcquire(t, a, key, distlock.WithTTL(30*time.Second))
	defer old.Release(ctx5(t)) //nolint:errcheck // force-released: ErrLeaseLost
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type got struct {
		ls  distlock.Lease
		err error
		at  time.Time
	}
	done := make(chan got, 1)
	go func() {
		ls, err := b.Acquire(ctx, key, distlock.WithTTL(10*time.Second))
		done <- got{ls, err, time.Now()}
	}()
	eventually(t, 5*time.Second, "the blocked Acquire is not queued", func() bool {
		return locktest.MustInspect(t, a, key).Waiters >= 1
	})
	time.Sleep(50 * time.Millisecond) // past the first attempts' back-off
	start := time.Now()
	if held, err := distlock.ForceRelease(ctx5(t), a, key); err != nil || !held {
		t.Fatalf("ForceRelease = %v, %v", held, err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("blocked Acquire after ForceRelease: %v", r.err)
	}
	defer mustRelease(t, r.ls)
	if d := r.at.Sub(start); d > time.Second {
		t.Fatalf("blocked Acquire woke %v after ForceRelease, want a push wake-up", d)
	}
}
