package zklock

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
)

// session is one go-zookeeper connection and the ZooKeeper sessions it
// carries over time: go-zookeeper re-establishes a new server session on
// the same Conn after an expiry, so the Locker tracks which server session
// (sid) each node belongs to.
//
// State comes from go-zookeeper's event callback (run on its goroutines;
// it never blocks) and from the connect response, which the dialer's
// connection wrapper reads as it passes (negotiated timeout, session ID).
type session struct {
	l       *Locker
	timeout time.Duration // requested session timeout
	conn    *zk.Conn      // set once, before the session is used
	events  <-chan zk.Event
	base    time.Time    // monotonic origin of lastRead
	read    atomic.Int64 // nanoseconds after base of the last byte read from a server
	tls     *tls.Config  // nil: plaintext

	// authDone is closed once authenticate is over (at once without
	// credentials); closing is closed by close.
	authDone, closing chan struct{}

	mu         sync.Mutex
	pendingSID int64         // from the last connect response
	pendingTO  time.Duration // idem
	sid        int64         // the server session in use; 0 before the first and after an expiry
	negotiated time.Duration // sid's timeout
	connected  bool
	up         chan struct{} // closed while connected with a session
	ended      chan struct{} // closed when the epoch of sid ends (expired, presumed expired, closed)
	cause      error         // why ended was closed
	presume    *time.Timer
	closed     bool
	held       map[string]*driver // own lock node path -> its holder
	dialErr    error              // the last connection's failure (see dialHint)
	authErr    error              // why authenticate failed; set before authDone closes
	// queued: own lock nodes of acquisitions in flight (not yet held);
	// true once a deletion of the node was seen. A deletion that arrives
	// between the watched read of the node and hold would otherwise find
	// no holder to tell, and the lease would run on to its validity.
	queued map[string]bool
}

// view is what a caller captured of a session when it started using it.
type view struct {
	sid     int64
	timeout time.Duration   // negotiated
	ended   <-chan struct{} // closed when that session (epoch) is over
}

func newSession(l *Locker, timeout time.Duration) (*session, error) {
	s := &session{
		l: l, timeout: timeout, base: time.Now(),
		up: make(chan struct{}), ended: make(chan struct{}), held: map[string]*driver{},
		queued: map[string]bool{}, tls: l.opts.TLS,
		authDone: make(chan struct{}), closing: make(chan struct{}),
	}
	conn, events, err := zk.Connect(l.servers, timeout,
		zk.WithDialer(s.dial), zk.WithEventCallback(s.onEvent),
		zk.WithLogger(l.opts.Logger), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("%w: zklock: connect: %w", distlock.ErrUnavailable, err)
	}
	s.conn, s.events = conn, events
	if l.opts.Username == "" {
		close(s.authDone)
	} else {
		go s.authenticate() // joined by close
	}
	return s, nil
}

// dial is go-zookeeper's Dialer: a TCP connection (with Options.TLS, a
// TLS connection whose handshake is done within timeout) whose reads are
// watched.
func (s *session) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		s.setDialErr(err)
		return nil, err
	}
	if s.tls != nil {
		if c, err = handshake(c, addr, s.tls, timeout); err != nil {
			s.l.opts.Logger.Printf("zklock: %v", err)
			s.setDialErr(err)
			return nil, err
		}
	}
	s.setDialErr(nil)
	return &watchedConn{Conn: c, s: s}, nil
}

// watchedConn records when the server last sent anything and reads the
// connect response's header as it passes: length (4 bytes), protocol
// version (4), negotiated timeout in ms (4), session ID (8).
type watchedConn struct {
	net.Conn
	s   *session
	hdr [20]byte
	n   int
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && c.n+n < len(c.hdr) {
		c.s.setDialErr(errNoHandshake)
	}
	if n > 0 {
		c.s.read.Store(int64(time.Since(c.s.base)))
		if c.n < len(c.hdr) {
			c.n += copy(c.hdr[c.n:], p[:n])
			if c.n == len(c.hdr) {
				to := time.Duration(int32(binary.BigEndian.Uint32(c.hdr[8:12]))) * time.Millisecond
				c.s.handshake(int64(binary.BigEndian.Uint64(c.hdr[12:20])), to)
			}
		}
	}
	return n, err
}

func (s *session) handshake(sid int64, timeout time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pendingSID, s.pendingTO = sid, timeout
}

// onEvent is go-zookeeper's event callback.
func (s *session) onEvent(ev zk.Event) {
	switch ev.Type {
	case zk.EventSession:
		switch ev.State {
		case zk.StateHasSession:
			s.onSession()
		case zk.StateDisconnected:
			s.onDisconnect()
		case zk.StateExpired:
			s.mu.Lock()
			s.endLocked(ErrSessionExpired)
			s.sid = 0
			s.setConnectedLocked(false)
			s.mu.Unlock()
		}
	case zk.EventNodeDeleted:
		s.mu.Lock()
		d := s.held[ev.Path]
		delete(s.held, ev.Path)
		if _, ok := s.queued[ev.Path]; ok {
			s.queued[ev.Path] = true
		}
		s.mu.Unlock()
		if d != nil {
			d.lose(fmt.Errorf("%w: %s", ErrNodeDeleted, ev.Path))
		}
	}
}

func (s *session) onSession() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if sid := s.pendingSID; sid != s.sid {
		if s.sid != 0 { // a new server session without an expiry event: the old one is gone
			s.endLocked(ErrSessionExpired)
		}
		s.sid, s.negotiated = sid, s.pendingTO
	}
	if isClosed(s.ended) { // a new session, or the old one back after a presumed expiry
		s.ended, s.cause = make(chan struct{}), nil
	}
	if s.presume != nil {
		s.presume.Stop()
		s.presume = nil
	}
	s.setConnectedLocked(true)
}

// onDisconnect suspends the session: leases stop being confirmed (their
// validity runs out on its own), and if no server answers within a
// session timeout of the last byte read, the session is presumed expired.
func (s *session) onDisconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setConnectedLocked(false)
	if s.closed || s.sid == 0 || isClosed(s.ended) || s.presume != nil {
		return
	}
	last := s.base.Add(time.Duration(s.read.Load()))
	ended := s.ended
	s.presume = time.AfterFunc(time.Until(last.Add(s.negotiated)), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.presume = nil
		if !s.connected && s.ended == ended {
			s.endLocked(ErrSessionPresumedExpired)
		}
	})
}

func (s *session) setConnectedLocked(c bool) {
	s.connected = c
	open := c && s.sid != 0
	if open && !isClosed(s.up) {
		close(s.up)
	} else if !open && isClosed(s.up) {
		s.up = make(chan struct{})
	}
}

// endLocked ends the current epoch: waiters stop, held leases are lost.
func (s *session) endLocked(cause error) {
	if isClosed(s.ended) {
		return
	}
	s.cause = cause
	close(s.ended)
	for p, d := range s.held {
		delete(s.held, p)
		d.lose(cause)
	}
}

// why returns the cause of the end of the epoch ended belongs to.
func (s *session) why(ended <-chan struct{}) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.whyLocked(ended)
}

func (s *session) whyLocked(ended <-chan struct{}) error {
	if s.ended == ended && s.cause != nil {
		return s.cause
	}
	return ErrSessionExpired
}

// ready waits until the session is connected and returns a view of it. If
// ctx has no deadline and bound > 0, it waits at most bound.
func (s *session) ready(ctx context.Context, bound time.Duration) (view, error) {
	var timeout <-chan time.Time
	if _, ok := ctx.Deadline(); !ok && bound > 0 {
		t := time.NewTimer(bound)
		defer t.Stop()
		timeout = t.C
	}
	for {
		s.mu.Lock()
		if s.authErr != nil {
			err := s.authErr
			s.mu.Unlock()
			return view{}, err
		}
		authed := isClosed(s.authDone)
		if s.connected && s.sid != 0 && !isClosed(s.ended) && authed {
			v := view{sid: s.sid, timeout: s.negotiated, ended: s.ended}
			s.mu.Unlock()
			return v, nil
		}
		up := s.up
		if s.connected && s.sid != 0 && !authed {
			up = s.authDone
		}
		s.mu.Unlock()
		select {
		case <-up:
		case <-ctx.Done():
			return view{}, fmt.Errorf("%w: zklock: no ZooKeeper session: %w%s", distlock.ErrUnavailable, ctxErr(ctx), s.dialHint())
		case <-timeout:
			return view{}, fmt.Errorf("%w: zklock: no ZooKeeper session within %v%s", distlock.ErrUnavailable, bound, s.dialHint())
		case <-s.l.lc.Closing().Done():
			return view{}, distlock.ErrClosed
		}
	}
}

// current returns the server session in use (0: none) and whether it is
// connected.
func (s *session) current() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sid, s.connected && s.sid != 0
}

// expect notes that an acquisition is in flight on the own node path, so
// that a deletion of it before hold is remembered. Every expect is
// matched by hold or unexpect.
func (s *session) expect(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queued[path] = false
}

func (s *session) unexpect(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.queued, path)
}

// hold registers d as the holder of its node, unless its epoch ended
// (a *SessionError) or the node was deleted since expect (ErrNodeDeleted).
func (s *session) hold(d *driver) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	deleted := s.queued[d.path]
	delete(s.queued, d.path)
	switch {
	case isClosed(d.ended):
		return &SessionError{Key: d.key, Cause: s.whyLocked(d.ended)}
	case deleted:
		return fmt.Errorf("%w: zklock: %q: our lock node %s was deleted before the grant: %w", distlock.ErrUnavailable, d.key, d.path, ErrNodeDeleted)
	}
	s.held[d.path] = d
	return nil
}

func (s *session) unhold(d *driver) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[d.path] == d {
		delete(s.held, d.path)
	}
}

// close ends the session (go-zookeeper sends a close request: the server
// deletes the session's nodes at once), waits for go-zookeeper's goroutine
// to exit (it closes the event channel last) and loses the held leases.
func (s *session) close() {
	s.mu.Lock()
	s.closed = true
	s.endLocked(distlock.ErrClosed) // before the server deletes the nodes
	s.mu.Unlock()
	close(s.closing)
	s.conn.Close()
	for range s.events {
	}
	<-s.authDone
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.presume != nil {
		s.presume.Stop()
		s.presume = nil
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
