package redlock

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock"
)

// maxIdle is how many idle connections a node keeps. An operation uses a
// connection alone until its reply, so a node needs one per concurrent
// operation: with a pool smaller than the concurrency, operations re-dial
// (and re-load the scripts), and under load those dials can miss the node
// timeout (benchmark B4 at k=64 in docs/benchmarks.md exercises this).
const maxIdle = 128

// node is one Redis master and its small pool of connections.
type node struct {
	addr string
	l    *Locker
	tls  *tls.Config // nil: plaintext (see nodeTLS)

	mu     sync.Mutex
	idle   []*conn
	conns  map[*conn]struct{} // every open connection, idle or in use
	closed bool

	releases releaseRetrier // releases to send again (retryrelease.go)

	judged     atomic.Bool  // its eviction settings were read and found safe (serverconf.go)
	judgeAfter atomic.Int64 // unreachable when they were to be read: not before this (Unix ns)
}

// get returns an idle connection, or nil.
func (n *node) get() *conn {
	n.mu.Lock()
	defer n.mu.Unlock()
	if k := len(n.idle); k > 0 {
		c := n.idle[k-1]
		n.idle = n.idle[:k-1]
		return c
	}
	return nil
}

// put returns c to the pool, or closes it if the pool is full or closed.
func (n *node) put(c *conn) {
	n.mu.Lock()
	if !n.closed && len(n.idle) < maxIdle {
		n.idle = append(n.idle, c)
		n.mu.Unlock()
		return
	}
	delete(n.conns, c)
	n.mu.Unlock()
	c.close()
}

// discard closes c.
func (n *node) discard(c *conn) {
	n.mu.Lock()
	delete(n.conns, c)
	n.mu.Unlock()
	c.close()
}

// track registers a new connection; it reports false (and closes nc) if
// the node is closed.
func (n *node) track(c *conn) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		c.close()
		return false
	}
	n.conns[c] = struct{}{}
	return true
}

// close closes every connection, idle or in use (which ends their
// blocked reads and writes).
func (n *node) close() {
	n.mu.Lock()
	n.closed = true
	conns := n.conns
	n.conns, n.idle = map[*conn]struct{}{}, nil
	n.mu.Unlock()
	for c := range conns {
		c.close()
	}
}

// dial opens a connection by deadline (or DialTimeout, if sooner), TLS
// handshake included (see secure: one that runs past deadline goes on in
// the background). Its set-up (AUTH and SELECT if configured, and,
// unless pubsub, SCRIPT LOAD of every script) is only buffered: it goes out with the connection's
// first request, so that a new connection costs one round trip, not two
// (a request sent with a round trip of its node timeout left would time
// out, and the operation return while it is still on its way). The first
// reader checks the set-up replies (see conn.next).
func (n *node) dial(ctx context.Context, deadline time.Time, pubsub bool) (*conn, error) {
	dialEnd := time.Now().Add(n.l.opts.DialTimeout)
	if dialEnd.Before(deadline) {
		deadline = dialEnd
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(dctx, "tcp", n.addr)
	if err != nil {
		return nil, err
	}
	c := newConn(nc)
	if !n.track(c) {
		return nil, distlock.ErrClosed
	}
	if n.tls != nil {
		if err := n.secure(dctx, c, deadline, dialEnd, pubsub); err != nil {
			return nil, err
		}
	}
	if err := nc.SetDeadline(deadline); err != nil { // for writes that overflow the buffer
		n.discard(c)
		return nil, err
	}
	n.setUp(c, pubsub)
	return c, nil
}

// setUp buffers c's set-up commands (see dial).
func (n *node) setUp(c *conn, pubsub bool) {
	if o := n.l.opts; o.Password != "" {
		if o.Username != "" {
			c.setUp("AUTH", o.Username, o.Password)
			c.auth = fmt.Sprintf("user %q", o.Username)
		} else {
			c.setUp("AUTH", o.Password)
			c.auth = "the default user (password only)"
		}
	}
	if n.l.opts.DB != 0 {
		c.setUp("SELECT", fmt.Sprint(n.l.opts.DB))
	}
	if !pubsub {
		for _, s := range allScripts {
			c.setUp("SCRIPT", "LOAD", s.src)
		}
	}
}
