package zklock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/testbed"
	"github.com/distlock/distlock/zklock"
)

// testTickTime: a lease counts on at most 2/3 of the negotiated session
// timeout minus half a tick (a server relays session activity to the
// leader only on its ticks) and the drift, and a session timeout that
// leaves nothing after that is refused with ErrInvalidArgument naming the
// fix.
func testTickTime(t *testing.T, e *ensemble) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const ttl = time.Second // the session timeout too: 4 ticks of the testbed
	l := e.locker(t, "tick", nil)
	ls, err := l.TryAcquire(ctx, uniqueKey(t), distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	returned := time.Now()
	defer ls.Release(ctx)
	limit := ttl*2/3 - testbedTick/2 // 541 ms; SafeFraction alone allows 600 ms
	if got := ls.ValidUntil().Sub(returned); got > limit {
		t.Fatalf("validity %v after the return, want at most %v (2/3 x timeout - tick/2)", got, limit)
	}

	// The default tick time (2 s) leaves a 1 s session no validity.
	short, err := zklock.New(e.Addrs("tick-default"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	_, err = short.TryAcquire(ctx, uniqueKey(t), distlock.WithTTL(ttl))
	wantErr(t, err, distlock.ErrInvalidArgument)
	if !strings.Contains(err.Error(), "TickTime") {
		t.Fatalf("error %q does not name Options.TickTime", err)
	}
	actx, acancel := context.WithTimeout(ctx, 2*time.Second)
	defer acancel()
	_, err = short.Acquire(actx, uniqueKey(t), distlock.WithTTL(ttl))
	wantErr(t, err, distlock.ErrInvalidArgument)
}

// The tests here put a client, a, on one follower only (its connect
// string lists just that server) and cut the follower off from the leader
// and the other follower (every packet between them is dropped; a's
// connection to it stays up). The follower answers reads and pings on
// its own until it gives up on the leader, syncLimit ticks later, while
// the leader stops hearing of a's session, expires it, deletes a's lock
// node and lets b, a client of the majority, acquire. a must not hold a
// lease that claims validity, or extends, while b holds the key.

// cutOff is an ensemble with a follower about to be cut off.
type cutOff struct {
	*ensemble
	follower *testbed.ZooKeeperNode
	a, b     *zklock.Locker // a: on the follower only; b: on the majority
	probe    *zk.Conn       // a plain session on the follower
	window   time.Duration  // syncLimit x tickTime
}

func startCutOff(t *testing.T, opts testbed.ZooKeeperOptions) *cutOff {
	t.Helper()
	testbed.RequireDocker(t)
	c := &cutOff{ensemble: &ensemble{ZooKeeperEnsemble: testbed.StartZooKeeperEnsemble(t, 3, opts)}}
	lead, err := c.Leader(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f := (lead + 1) % len(c.Nodes)
	c.follower = c.Nodes[f]
	var majority, admin []string
	for i, n := range c.Nodes {
		if i != f {
			majority, admin = append(majority, n.Link("b").Addr()), append(admin, n.Link("admin").Addr())
		}
	}
	c.admin = connect(t, admin)
	tick, limit := opts.TickTime, opts.SyncLimit
	if tick == 0 {
		tick = testbedTick
	}
	if limit == 0 {
		limit = 8 // the testbed's default
	}
	c.a = newLocker(t, []string{c.follower.Link("a").Addr()}, tick)
	c.b = newLocker(t, majority, tick)
	c.probe = connect(t, []string{c.follower.Link("probe").Addr()})
	c.window = time.Duration(limit) * tick
	return c
}

func newLocker(t *testing.T, servers []string, tick time.Duration) *zklock.Locker {
	t.Helper()
	l, err := zklock.New(servers, &zklock.Options{TickTime: tick})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// cut drops every packet between the follower and the other servers until
// the test ends, and returns when the cut began.
func (c *cutOff) cut(t *testing.T) time.Time {
	t.Helper()
	at := time.Now()
	for _, o := range c.Nodes {
		if o != c.follower {
			if err := c.follower.CutPeer(context.Background(), o.Node); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := c.follower.HealPeer(context.Background(), o.Node); err != nil {
					t.Error(err)
				}
			})
		}
	}
	return at
}

// serving fails the test unless the cut-off follower answers a read of
// path on a connection it had before the cut: the window is open.
func (c *cutOff) serving(t *testing.T, path string, cut time.Time) time.Duration {
	t.Helper()
	if ok, _, err := c.probe.Exists(path); err != nil || !ok {
		t.Fatalf("the cut-off follower did not answer a read %v after the cut (exists %v, %v): no window to test", time.Since(cut), ok, err)
	}
	return time.Since(cut)
}

// noOverlap checks a's lease at the moment b was granted the key.
func noOverlap(t *testing.T, held distlock.Lease, cut, granted time.Time) {
	t.Helper()
	valid := held.ValidUntil()
	lost := false
	select {
	case <-held.Done():
		lost = true
	default:
	}
	t.Logf("b acquired %v after the cut; a's lease valid until %v after the cut, lost %v (%v)",
		granted.Sub(cut).Round(time.Millisecond), valid.Sub(cut).Round(time.Millisecond), lost, held.Err())
	if !lost && valid.After(granted) {
		t.Errorf("b acquired %v after the cut while a's lease still claimed %v of validity and had not fired Done",
			granted.Sub(cut).Round(time.Millisecond), valid.Sub(granted).Round(time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := held.Extend(ctx, time.Second); err == nil {
		t.Errorf("a extended its lease while b holds the key")
	}
}

// TestFollowerCutOffHolder: a holds the key, with auto-extension, when its
// follower is cut off. Both cases leave the follower serving for a window
// that is not small against the session timeout: a 2 s TTL beside the
// testbed's 250 ms x 8 ticks, and the default TTL (30 s) beside tickTime
// 2 s and syncLimit 10, a production setting.
func TestFollowerCutOffHolder(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts testbed.ZooKeeperOptions
		ttl  time.Duration // 0: distlock.DefaultTTL
	}{
		{"TTL2s", testbed.ZooKeeperOptions{}, 2 * time.Second},
		{"DefaultTTL", testbed.ZooKeeperOptions{TickTime: 2 * time.Second, SyncLimit: 10}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startCutOff(t, tc.opts)
			var opts []distlock.Option
			ttl := distlock.DefaultTTL
			if tc.ttl != 0 {
				ttl = tc.ttl
				opts = append(opts, distlock.WithTTL(ttl))
			}
			key := uniqueKey(t)
			held := mustAcquire(t, c.a, key, append(opts, distlock.WithAutoExtend(time.Hour))...)
			nodes := c.lockNodes(t, key)
			if len(nodes) != 1 {
				t.Fatalf("lock nodes %v, want a's", nodes)
			}
			cut := c.cut(t)
			served := c.serving(t, c.a.Path(key)+"/"+nodes[0], cut)
			if _, connected := zklock.SessionID(c.a, ttl); !connected {
				t.Fatal("a lost its connection to the follower at the cut: no window to test")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*ttl+c.window+30*time.Second)
			defer cancel()
			lb, err := c.b.Acquire(ctx, key, opts...)
			granted := time.Now()
			if err != nil {
				t.Fatalf("b did not acquire %v after the cut: %v", granted.Sub(cut), err)
			}
			defer func() { _ = lb.Release(context.Background()) }()
			t.Logf("ttl %v, follower window %v; the follower answered a read %v after the cut", ttl, c.window, served.Round(time.Millisecond))
			noOverlap(t, held, cut, granted)
		})
	}
}

// TestFollowerCutOffWaiter: a waits in the queue behind h, a client of the
// majority. h releases; the follower passes the deletion on to a and is
// then cut off, before a lists the queue again. The follower's copy shows
// a first: a listing it answers alone must not grant a lease that outlives
// a's session at the leader.
func TestFollowerCutOffWaiter(t *testing.T) {
	const ttl = 2 * time.Second
	c := startCutOff(t, testbed.ZooKeeperOptions{SyncLimit: 16}) // the follower serves 4 s after the cut
	key := uniqueKey(t)
	h := newLocker(t, c.Addrs("h"), testbedTick)
	hl := mustAcquire(t, h, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))

	woken := make(chan string, 1)
	proceed := make(chan struct{})
	restore := zklock.SetHookBeforeRelist(func(own string) {
		select {
		case woken <- own:
			<-proceed
		default:
		}
	})
	defer restore()
	type result struct {
		ls  distlock.Lease
		err error
	}
	acquired := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ls, err := c.a.Acquire(ctx, key, distlock.WithTTL(ttl))
		acquired <- result{ls, err}
	}()
	eventually(t, 10*time.Second, "a did not queue", func() bool { return len(c.lockNodes(t, key)) == 2 })
	mustRelease(t, hl)
	var own string
	select {
	case own = <-woken:
	case <-time.After(10 * time.Second):
		t.Fatal("a was not woken by h's release")
	}
	cut := c.cut(t)
	time.Sleep(1500 * time.Millisecond) // later in the window: a's session at the leader nears its end
	served := c.serving(t, own, cut)
	close(proceed)

	ctx, cancel := context.WithTimeout(context.Background(), 3*ttl+c.window+30*time.Second)
	defer cancel()
	lb, err := c.b.Acquire(ctx, key, distlock.WithTTL(ttl))
	granted := time.Now()
	if err != nil {
		t.Fatalf("b did not acquire %v after the cut: %v", granted.Sub(cut), err)
	}
	defer func() { _ = lb.Release(context.Background()) }()
	t.Logf("ttl %v, follower window %v; the follower answered a read %v after the cut", ttl, c.window, served.Round(time.Millisecond))
	var r result
	select {
	case r = <-acquired:
	default:
		t.Log("a is still waiting")
		r = <-acquired // its Acquire ends with its session, or its 30 s context
		if r.err == nil {
			t.Errorf("a acquired while b holds the key")
		}
	}
	if r.err != nil {
		t.Logf("a's Acquire: %v", r.err)
		return
	}
	defer func() { _ = r.ls.Release(context.Background()) }()
	noOverlap(t, r.ls, cut, granted)
}
