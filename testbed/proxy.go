package testbed

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// proxyDialTimeout bounds the dial to the target for each accepted
// connection.
const proxyDialTimeout = 2 * time.Second

// Proxy is an in-process TCP proxy on loopback that forwards every accepted
// connection to a target address and can inject network faults: a
// blackhole (partition), latency, and connection resets.
//
// Every goroutine a Proxy starts is owned by it and joined by Close. A Proxy
// is safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	ctx    context.Context // cancelled by Close; bounds dials
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	target    string
	blackhole bool
	dropReply bool // drop server-to-client bytes only
	latency   time.Duration
	changed   chan struct{} // closed and replaced when blackhole or latency change
	conns     map[*proxyConn]struct{}
	gen       uint64 // incremented by every Reset
	closed    bool
}

// NewProxy starts a proxy listening on 127.0.0.1 at a free port that
// forwards to target (host:port). An empty target makes the proxy close
// every new connection at once, as if nothing listened behind it.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		ln:      ln,
		ctx:     ctx,
		cancel:  cancel,
		target:  target,
		changed: make(chan struct{}),
		conns:   make(map[*proxyConn]struct{}),
	}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the host:port clients connect to. It does not change for the
// life of the proxy.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address new connections are forwarded to.
func (p *Proxy) Target() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.target
}

// SetTarget makes new connections go to addr and resets all existing ones.
// An empty addr makes the proxy close new connections at once.
func (p *Proxy) SetTarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
	p.Reset()
}

// Blackhole silently drops the bytes of all current and new connections in
// both directions, while still accepting connections: requests hang as in a
// network partition. Heal ends it.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackhole = true
	p.notifyLocked()
}

// DropReplies keeps forwarding requests to the server but silently drops
// everything it sends back, on current and new connections: the server
// acts, the client never hears (a lost reply). Heal ends it.
func (p *Proxy) DropReplies() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropReply = true
	p.notifyLocked()
}

func (p *Proxy) dropping(reply bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blackhole || (reply && p.dropReply)
}

// SetLatency delays every chunk forwarded in either direction by d,
// measured from when the proxy read it. Ordering is kept. A change applies
// to chunks still waiting, too.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = max(d, 0)
	p.notifyLocked()
}

// Heal undoes Blackhole and SetLatency. Bytes dropped while blackholed stay
// lost; connections accepted while blackholed whose target could not be
// reached are closed.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.blackhole = false
	p.dropReply = false
	p.latency = 0
	p.notifyLocked()
	var sinks []*proxyConn
	for c := range p.conns {
		if c.upstream == nil {
			sinks = append(sinks, c)
		}
	}
	p.mu.Unlock()
	for _, c := range sinks {
		c.close(true)
	}
}

// Reset closes all current connections; clients see a connection reset.
// New connections are accepted as before.
func (p *Proxy) Reset() {
	p.mu.Lock()
	p.gen++
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.close(true)
	}
}

// Close stops listening, closes all connections and waits for every
// goroutine the proxy started to exit. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	already := p.closed
	p.closed = true
	p.mu.Unlock()
	var err error
	if !already {
		err = p.ln.Close()
		p.cancel()
		p.Reset()
	}
	p.wg.Wait()
	return err
}

// notifyLocked wakes writers waiting on a latency deadline. p.mu is held.
func (p *Proxy) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// faults returns the current fault state and the channel closed on its
// next change.
func (p *Proxy) faults() (blackhole bool, latency time.Duration, changed <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blackhole, p.latency, p.changed
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // listener closed
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve dials the target for one accepted connection and pumps bytes both
// ways until either side ends or the connection is reset.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	pc := &proxyConn{client: client, done: make(chan struct{})}

	p.mu.Lock()
	target, blackholed, gen := p.target, p.blackhole, p.gen
	p.mu.Unlock()

	var up net.Conn
	if target != "" {
		ctx, cancel := context.WithTimeout(p.ctx, proxyDialTimeout)
		var d net.Dialer
		up, _ = d.DialContext(ctx, "tcp", target)
		cancel()
	}
	if up == nil && !blackholed {
		pc.close(true) // nothing behind the proxy: refuse
		return
	}
	pc.upstream = up

	p.mu.Lock()
	if p.closed || p.gen != gen {
		// Closed, reset or re-targeted while dialing.
		p.mu.Unlock()
		pc.close(true)
		return
	}
	p.conns[pc] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, pc)
		p.mu.Unlock()
	}()

	if up == nil {
		// Blackholed and the target is unreachable: hold the connection
		// and swallow its bytes until healed, reset or closed.
		p.discard(pc)
		return
	}

	var pumps sync.WaitGroup
	pumps.Add(2)
	go p.pump(pc, client, up, &pumps)
	go p.pump(pc, up, client, &pumps)
	pumps.Wait()
	pc.close(false)
}

// discard reads and drops everything the client sends until the
// connection is closed.
func (p *Proxy) discard(pc *proxyConn) {
	buf := make([]byte, 32<<10)
	for {
		if _, err := pc.client.Read(buf); err != nil {
			pc.close(false)
			return
		}
	}
}

// chunk is one read from a source, stamped with when it was read.
type chunk struct {
	data []byte
	at   time.Time
}

// pump copies src to dst through a queue so that latency delays each chunk
// without delaying the reading of the next. When src ends, dst's write side
// is shut down after the queue drains.
func (p *Proxy) pump(pc *proxyConn, src, dst net.Conn, done *sync.WaitGroup) {
	defer done.Done()
	queue := make(chan chunk, 64)
	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		p.write(pc, dst, queue)
	}()
	defer writer.Wait()
	defer close(queue)

	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.dropping(src == pc.upstream) {
				data := append([]byte(nil), buf[:n]...)
				select {
				case queue <- chunk{data: data, at: time.Now()}:
				case <-pc.done:
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// write delivers queued chunks to dst in order, each no earlier than its
// read time plus the current latency, dropping those that come due while
// the proxy is blackholed.
func (p *Proxy) write(pc *proxyConn, dst net.Conn, queue <-chan chunk) {
	for c := range queue {
		for {
			blackholed, latency, changed := p.faults()
			wait := time.Until(c.at.Add(latency))
			if blackholed || wait <= 0 {
				if !blackholed {
					if _, err := dst.Write(c.data); err != nil {
						pc.close(false)
						drain(queue)
						return
					}
				}
				break
			}
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-changed:
			case <-pc.done:
				timer.Stop()
				drain(queue)
				return
			}
			timer.Stop()
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

func drain(queue <-chan chunk) {
	for range queue {
	}
}

// proxyConn is one client connection and, unless it is a blackhole sink,
// its upstream connection.
type proxyConn struct {
	client   net.Conn
	upstream net.Conn // nil for a sink accepted while blackholed
	once     sync.Once
	done     chan struct{}
}

// close closes both sides once. With reset, the client gets a TCP RST
// instead of a FIN.
func (c *proxyConn) close(reset bool) {
	c.once.Do(func() {
		close(c.done)
		if tc, ok := c.client.(*net.TCPConn); ok && reset {
			_ = tc.SetLinger(0)
		}
		_ = c.client.Close()
		if c.upstream != nil {
			_ = c.upstream.Close()
		}
	})
}
