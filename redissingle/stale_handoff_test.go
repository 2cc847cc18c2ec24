package redissingle_test

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redissingle"
)

// pushGate delays what a client's pub/sub connection reads, as if the
// goroutine that reads notifications were paused, while the client's other
// connections run on. It also counts the writes of those other
// connections.
type pushGate struct {
	mu     sync.Mutex
	closed chan struct{} // non-nil while reads are held; closed to let them go
	writes atomic.Int64  // writes on non-pub/sub connections
}

// hold makes reads of the pub/sub connection wait (with their data) until
// release.
func (g *pushGate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == nil {
		g.closed = make(chan struct{})
	}
}

// release lets held and later reads through. It is idempotent.
func (g *pushGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
}

func (g *pushGate) wait() {
	g.mu.Lock()
	ch := g.closed
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// gatedConn is a connection of a client behind a pushGate. It becomes the
// pub/sub connection when it sends SUBSCRIBE.
type gatedConn struct {
	net.Conn
	g      *pushGate
	pubsub atomic.Bool
}

func (c *gatedConn) Write(b []byte) (int, error) {
	if bytes.Contains(bytes.ToLower(b), []byte("subscribe")) {
		c.pubsub.Store(true)
	} else if !c.pubsub.Load() {
		c.g.writes.Add(1)
	}
	return c.Conn.Write(b)
}

func (c *gatedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.pubsub.Load() {
		c.g.wait() // the data has arrived; hand it over only when released
	}
	return n, err
}

// TestStaleHandoffIsConfirmed forces the stale hand-off interleaving: a
// release hands the key to waiter W, but W's notification is read late
// (its pub/sub reader is held); meanwhile the handed key expires, another
// client C takes it, and W polls (finding it held by C). When W finally
// reads the notification it must ask the server (compare-and-PEXPIRE on
// its token) instead of trusting the message: W's Acquire must not return
// a lease while C holds the key, only after C releases, with a newer
// fence.
func TestStaleHandoffIsConfirmed(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()

	const (
		waiterTTL = 2 * time.Second // the hand-off's key lives this long
		holderTTL = 5 * time.Second // W's first poll comes when this runs out
		otherTTL  = 60 * time.Second
	)
	g := &pushGate{}
	wc := redis.NewClient(&redis.Options{
		Addr: s.node.Link("w").Addr(),
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &gatedConn{Conn: c, g: g}, nil
		},
		DialTimeout:              time.Second,
		DialerRetries:            1,
		ReadTimeout:              5 * time.Second,
		WriteTimeout:             2 * time.Second,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { _ = wc.Close() })
	// A long PollInterval: W asks the server only when the holder's TTL
	// runs out, or when a notification or a subscription change wakes it.
	w, err := redissingle.New(wc, &redissingle.Options{PollInterval: 30 * time.Second})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	t.Cleanup(g.release) // runs first: Close must not wait on a held read
	defer g.release()
	other := s.locker(t, "other", nil)
	key := uniqueKey(t)

	// Subscribe W's Locker (its first Acquire does), and see it on the server.
	warm := mustAcquire(t, w, uniqueKey(t))
	mustRelease(t, warm)
	eventually(t, 5*time.Second, "W's Locker never subscribed", func() bool {
		chans, err := s.admin().PubSubChannels(ctx, "*distlock:w:*").Result()
		return err == nil && len(chans) == 1
	})

	holder := mustAcquire(t, other, key, distlock.WithTTL(holderTTL))
	var cReleasing atomic.Bool // set just before C releases
	type result struct {
		ls          distlock.Lease
		err         error
		afterCstart bool // C had begun releasing when Acquire returned
	}
	got := make(chan result, 1)
	go func() {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second) // did-not-hang bound
		defer cancel()
		ls, err := w.Acquire(actx, key, distlock.WithTTL(waiterTTL), distlock.WithRetryDelay(20*time.Millisecond, 40*time.Millisecond))
		got <- result{ls, err, cReleasing.Load()}
	}()
	queueLen := func() int64 {
		qs := s.keysMatching(t, "distlock:*:q:"+key)
		if len(qs) != 1 {
			return 0
		}
		n, _ := s.admin().LLen(ctx, qs[0]).Result()
		return n
	}
	eventually(t, 5*time.Second, "W never queued", func() bool { return queueLen() == 1 })

	// The release hands the key to W; W's reader is held, so W does not
	// learn of it.
	g.hold()
	mustRelease(t, holder)
	if n := queueLen(); n != 0 {
		t.Fatalf("the release did not pop W's entry (queue length %d)", n)
	}

	// The handed key expires; C takes it.
	eventually(t, 2*waiterTTL+2*time.Second, "the handed-off key never expired", func() bool {
		n, err := s.admin().Exists(ctx, key).Result()
		return err == nil && n == 0
	})
	select {
	case r := <-got:
		t.Fatalf("setup: W's Acquire returned before the handed key expired (W polled too early?): %v, %v", r.ls, r.err)
	default:
	}
	c, err := other.TryAcquire(ctx, key, distlock.WithTTL(otherTTL))
	if err != nil {
		t.Fatalf("setup: C's TryAcquire after the hand-off expired: %v", err)
	}
	t.Logf("hand-off expired; C holds the key with fence %d", c.Fence())

	// W polls when the first holder's TTL runs out: it finds C's key and
	// puts its entry back in the queue.
	eventually(t, holderTTL+5*time.Second, "W never polled after C took the key", func() bool { return queueLen() == 1 })

	// Now W reads the stale notification. It must ask the server (a write
	// on its command connection) rather than return a lease.
	before := g.writes.Load()
	g.release()
	acted := time.NewTimer(20 * time.Second)
	defer acted.Stop()
	for g.writes.Load() == before {
		select {
		case r := <-got:
			v, _ := s.admin().Get(ctx, key).Result()
			if r.err == nil {
				t.Fatalf("two holders: W's Acquire returned a lease (fence %d) from the stale hand-off, without asking the server, "+
					"while C holds the key (fence %d; server value %q)", r.ls.Fence(), c.Fence(), v)
			}
			t.Fatalf("W's Acquire failed on the stale hand-off instead of waiting for C: %v", r.err)
		case <-acted.C:
			t.Fatal("W neither asked the server nor returned after reading the notification")
		case <-time.After(5 * time.Millisecond):
		}
	}

	// Whatever W does next, it may hold the key only after C lets go.
	select {
	case r := <-got:
		t.Fatalf("W's Acquire returned while C holds the key (fence %d): lease %v, err %v", c.Fence(), r.ls, r.err)
	case <-time.After(200 * time.Millisecond): // a chance to misbehave; passing does not depend on it
	}
	cReleasing.Store(true)
	mustRelease(t, c)
	var r result
	select {
	case r = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("W's Acquire hung after C released")
	}
	if r.err != nil {
		t.Fatalf("W's Acquire after C released: %v", r.err)
	}
	if !r.afterCstart {
		t.Fatalf("two holders: W's lease (fence %d) was granted while C held the key (fence %d)", r.ls.Fence(), c.Fence())
	}
	if r.ls.Fence() <= c.Fence() {
		t.Fatalf("W's lease has fence %d, not newer than C's %d: granted from the stale hand-off", r.ls.Fence(), c.Fence())
	}
	mustRelease(t, r.ls)
	if left := s.leftovers(t, key); len(left) > 0 {
		t.Fatalf("keys left: %v", left)
	}
}
