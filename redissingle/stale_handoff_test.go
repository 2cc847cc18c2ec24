package redissingle_test

import (
	"bytes"
	"context"
	"net"
	"regexp"
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
	cond   *sync.Cond
	held   bool
	one    bool         // let one notification through, then hold again
	writes atomic.Int64 // writes on non-pub/sub connections
}

func newPushGate() *pushGate {
	g := &pushGate{}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// hold makes reads of the pub/sub connection wait (with their data) until
// release or releaseOne.
func (g *pushGate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = true
}

// release lets held and later reads through. It is idempotent.
func (g *pushGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held, g.one = false, false
	g.cond.Broadcast()
}

// releaseOne lets the first held notification through, and no more.
func (g *pushGate) releaseOne() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.one = true
	g.cond.Broadcast()
}

// wait blocks while the gate is held; it reports whether this read may
// pass only one notification.
func (g *pushGate) wait() (one bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.held && !g.one {
		g.cond.Wait()
	}
	if g.held && g.one {
		g.one = false
		return true
	}
	return false
}

// gatedConn is a connection of a client behind a pushGate. It becomes the
// pub/sub connection when it sends SUBSCRIBE.
type gatedConn struct {
	net.Conn
	g      *pushGate
	pubsub atomic.Bool
	buf    []byte // pub/sub data read and not yet handed over
}

func (c *gatedConn) Write(b []byte) (int, error) {
	if bytes.Contains(bytes.ToLower(b), []byte("subscribe")) {
		c.pubsub.Store(true)
	} else if !c.pubsub.Load() {
		c.g.writes.Add(1)
	}
	return c.Conn.Write(b)
}

// pushPrefix starts every pub/sub message (RESP2 and RESP3).
var pushPrefix = regexp.MustCompile(`[*>]3\r\n\$7\r\nmessage\r\n`)

func (c *gatedConn) Read(b []byte) (int, error) {
	if !c.pubsub.Load() {
		return c.Conn.Read(b)
	}
	if len(c.buf) == 0 {
		n, err := c.Conn.Read(b)
		if n == 0 {
			return n, err
		}
		c.buf = append(c.buf, b[:n]...)
	}
	k := len(c.buf) // the data has arrived; hand it over only when released
	if c.g.wait() {
		if loc := pushPrefix.FindAllIndex(c.buf, 2); len(loc) == 2 {
			k = loc[1][0] // the first notification only
		}
	}
	n := copy(b, c.buf[:k])
	c.buf = c.buf[n:]
	return n, nil
}

// TestStaleHandoffIsConfirmed forces the stale hand-off interleaving: a
// release hands the key to waiter W, but W's notification is read late
// (its pub/sub reader is held); meanwhile the handed key expires, another
// client C takes it, and W polls (finding it held by C). When W finally
// reads the notification it must ask the server (compare-and-PEXPIRE on
// its token) instead of trusting the message: W's Acquire must not return
// a lease while C holds the key, only after C releases, with a newer
// fence.
func TestStaleHandoffIsConfirmed(t *testing.T) { staleHandoff(t, false) }

// TestStaleHandoffAfterASecondHandoff: as above, but C releases while W's
// reader is still held, handing the key to W a second time, with a newer
// fence. W then reads the stale notification first: the key does carry
// W's token, but with the second fence, so the stale one must not be
// granted (fences would go back: W's lease older than C's).
func TestStaleHandoffAfterASecondHandoff(t *testing.T) { staleHandoff(t, true) }

func staleHandoff(t *testing.T, rehand bool) {
	s := startRedis(t)
	ctx := context.Background()

	const (
		waiterTTL = 2 * time.Second // the hand-off's key lives this long
		holderTTL = 5 * time.Second // W's first poll comes when this runs out
		otherTTL  = 60 * time.Second
	)
	g := newPushGate()
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
	// await is W's Acquire returning a lease after what.
	await := func(what string) result {
		t.Helper()
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatalf("W's Acquire after %s: %v", what, r.err)
			}
			return r
		case <-time.After(30 * time.Second):
			t.Fatalf("W's Acquire hung after %s", what)
		}
		return result{}
	}
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

	if rehand {
		// C releases while W's reader is still held: the key goes to W
		// again, with a fence newer than C's. W then reads only the
		// stale first notification, and acts on it (a write on its
		// command connection) before the second reaches it.
		cReleasing.Store(true)
		mustRelease(t, c)
		if n := queueLen(); n != 0 {
			t.Fatalf("C's release did not pop W's entry (queue length %d)", n)
		}
		before := g.writes.Load()
		g.releaseOne()
		eventually(t, 20*time.Second, "W never acted on the stale notification", func() bool {
			return g.writes.Load() > before
		})
		time.Sleep(100 * time.Millisecond) // let it finish; passing does not depend on it
		g.release()
		r := await("the second hand-off")
		if r.ls.Fence() <= c.Fence() {
			t.Fatalf("fences went back: W's lease has fence %d, granted from the stale first hand-off, while C held fence %d before it", r.ls.Fence(), c.Fence())
		}
		mustRelease(t, r.ls)
		return
	}

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
	r := await("C released")
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
