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

// newGatedLocker returns a Locker on s whose client's pub/sub reads pass
// through a new pushGate, and that gate. The Locker is subscribed (its
// first Acquire has run, and the server lists its channel). The gate is
// released before the Locker closes, so that Close does not wait on a
// held read.
func newGatedLocker(t *testing.T, s *server, opts *redissingle.Options) (*redissingle.Locker, *pushGate) {
	t.Helper()
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
	w, err := redissingle.New(wc, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	t.Cleanup(g.release) // runs first
	mustRelease(t, mustAcquire(t, w, uniqueKey(t)))
	eventually(t, 5*time.Second, "the gated Locker never subscribed", func() bool {
		chans, err := s.admin().PubSubChannels(context.Background(), "*distlock:w:*").Result()
		return err == nil && len(chans) == 1
	})
	return w, g
}
