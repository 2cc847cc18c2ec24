package pgadvisory

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/stop"
)

// closeTimeout bounds the closing of a connection: the Terminate message,
// or the background clean-up pgx runs when a request was interrupted (see
// conn.close; its cancel request is bounded by cancelTimeout).
const closeTimeout = time.Second

// conn is one connection of the Locker's pool. A lease or a waiting
// Acquire has it to itself; it is never shared.
type conn struct {
	*pgx.Conn
	pid uint32 // pg_backend_pid() at set-up (session mode)
	// timeout is the session's idle_session_timeout as our statements last
	// set it with the other TTL settings (timeouts.go; 0: not set, or
	// reset). A connection keeps its lease's settings when it returns to
	// the pool, so the next lease with the same TTL need not set them
	// again (see idle.go).
	timeout time.Duration
	// sent is when the last statement before the connection went idle was
	// sent: the server's idle clock started later.
	sent time.Time
}

// setTimeout records that the session's TTL settings are now ttl's (as
// msText rendered it).
func (c *conn) setTimeout(ttl time.Duration) { c.timeout = msSetting(ttl) }

// close closes the connection (sending Terminate if it can). Closing ends
// the server session, which frees every advisory lock it held. If a
// request on it was interrupted, pgx has begun closing it in the
// background (a cancel request on a new connection, Terminate, then
// draining the socket until the server closes it, for up to 15 s): close
// waits for that, closing the socket after closeTimeout so that it ends.
func (c *conn) close() {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_ = c.Conn.Close(ctx)
	done := c.PgConn().CleanupDone()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	_ = c.PgConn().Conn().Close()
	<-done // the cancel request is bounded too (boundPgxDials)
}

// ownDial marks the context of the Locker's own connects (pool.dial).
type ownDial struct{}

// cancelTimeout bounds the cancel request pgx sends on a connection of its
// own while it closes a connection whose request was interrupted: the
// connect and the exchange together. The request is only a courtesy (the
// connection is closed anyway, and the server checks its clients every
// conn_check_interval), so it is kept short: Close waits for it.
const cancelTimeout = 250 * time.Millisecond

// boundPgxDials wraps cfg's dial function so that a dial pgx makes on its
// own, for the cancel request, is bounded by cancelTimeout, connect and
// exchange together; a server that does not answer (partitioned) would
// otherwise keep it for 15 s. The Locker's own connects (ctx marked
// ownDial) are bounded by the request timeout instead.
func boundPgxDials(cfg *pgx.ConnConfig) {
	dial := cfg.DialFunc
	if dial == nil {
		return
	}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if ctx.Value(ownDial{}) != nil {
			return dial(ctx, network, addr)
		}
		deadline := time.Now().Add(cancelTimeout)
		dctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		nc, err := dial(dctx, network, addr)
		if err == nil {
			_ = nc.SetDeadline(deadline)
		}
		return nc, err
	}
}

// pool keeps idle connections for reuse, last in first out. Its
// goroutines are the sweep of idle.go and the closing of discarded
// connections, which close stops and waits for.
type pool struct {
	cfg     *pgx.ConnConfig
	mode    Mode
	maxIdle int
	setup   string        // session-mode set-up statement, "" for none
	timeout time.Duration // bounds connecting with the set-up (Options.RequestTimeout)

	mu     sync.Mutex
	idle   []*conn
	closed bool
	sweep  sweeper // resets the timeout of connections idle too long

	// closers are the closings of connections discarded after their
	// caller's context ended (see discard).
	closers sync.WaitGroup
}

// newPool returns the pool of connections opened with cfg, which it
// changes (boundPgxDials).
func newPool(cfg *pgx.ConnConfig, o Options) *pool {
	boundPgxDials(cfg)
	p := &pool{cfg: cfg, mode: o.Mode, maxIdle: max(o.MaxIdle, 0), timeout: o.RequestTimeout, sweep: sweeper{stopping: stop.New()}}
	if o.Mode == ModeSession {
		p.setup = setupSQL(o.ConnCheckInterval)
	}
	return p
}

// livenessKeepaliveIdle is the tcp_keepalives_idle, in seconds, of a
// session-mode connection that holds no lease's TTL settings: with 3
// probes 1 s apart, the server ends such a session (a waiter or a pooled
// connection whose client vanished) within seconds. A lease raises it to
// its TTL (timeouts.go).
const livenessKeepaliveIdle = "5"

// setupSQL is run once on each new session-mode connection, as an unnamed
// statement (a pooler may not keep named ones): it reads pg_backend_pid()
// and, only if that is the pid the connection was opened with (no pooler
// in between), sets the session's liveness settings, so a pooler's shared
// server connections are left untouched.
func setupSQL(check time.Duration) string {
	sets := "set_config('tcp_keepalives_idle', '" + livenessKeepaliveIdle + "', false) || set_config('tcp_keepalives_interval', '1', false) || " +
		"set_config('tcp_keepalives_count', '3', false)"
	if check > 0 {
		sets += " || set_config('client_connection_check_interval', '" + strconv.FormatInt(max(check.Milliseconds(), 1), 10) + "', false)"
	}
	// $1 is int8: a pooler announces a random 32-bit "pid" that may not
	// fit int4 (PgBouncer's can exceed 2^31), and an int4 comparison would
	// then fail with SQLSTATE 22003 instead of detecting the pooler.
	return "SELECT pg_backend_pid(), CASE WHEN pg_backend_pid()::int8 = $1::int8 THEN " + sets + " END"
}

// get returns an idle connection that is still alive, or a new one. Dial
// failures match distlock.ErrUnavailable; a pooler in front of a
// session-mode Locker gives a *PoolerError.
func (p *pool) get(ctx context.Context) (*conn, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, distlock.ErrClosed
		}
		var c *conn
		if n := len(p.idle); n > 0 {
			c, p.idle = p.idle[n-1], p.idle[:n-1]
		}
		p.mu.Unlock()
		if c == nil {
			return p.dial(ctx)
		}
		if !c.expiring(time.Now()) && alive(c.PgConn().Conn()) {
			return c, nil
		}
		c.close() // the server ended it while idle (restart, timeout), or may at any moment
	}
}

// put returns a healthy connection for reuse, or closes it if the pool is
// closed or full.
func (p *pool) put(c *conn) {
	p.mu.Lock()
	if !p.closed && len(p.idle) < p.maxIdle && !c.IsClosed() {
		p.idle = append(p.idle, c)
		if c.timeout > 0 {
			p.armLocked(c.resetAt())
		}
		c = nil
	}
	p.mu.Unlock()
	if c != nil {
		c.close()
	}
}

// close closes the idle connections; later gets fail with ErrClosed and
// puts close their connection.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.disarmLocked()
	p.mu.Unlock()
	p.sweep.stopping.Fire() // a sweep's resets end at once; it closes their connections
	for _, c := range idle {
		c.close()
	}
	p.sweep.running.Wait()
	p.closers.Wait()
}

// discard closes c, which a request under ctx left in doubt. While ctx is
// live it closes c before returning. Once ctx has ended it only starts the
// closing: on a server that does not answer (frozen, partitioned), closing
// an interrupted connection takes up to closeTimeout (see conn.close), and
// the caller must return when its context ends. The closing goes on in
// the background, so the server still ends the session and frees what it
// held; close waits for it. discard is called only by a call registered
// with the Locker's lifecycle (or a goroutine such a call joins), so every
// closing starts before close runs.
func (p *pool) discard(ctx context.Context, c *conn) {
	if ctx.Err() == nil {
		c.close()
		return
	}
	p.closers.Add(1)
	go func() {
		defer p.closers.Done()
		c.close()
	}()
}

// dial opens a connection and, in session mode, checks that no pooler
// stands between it and the server: one request, bounded by p.timeout.
func (p *pool) dial(ctx context.Context) (*conn, error) {
	var c *conn
	var pid int64
	step := "connect"
	err := request(ctx, p.timeout, func(ctx context.Context) error {
		pc, err := pgx.ConnectConfig(context.WithValue(ctx, ownDial{}, true), p.cfg)
		if err != nil {
			return err
		}
		c = &conn{Conn: pc}
		if p.setup == "" {
			return nil
		}
		step = "connection set-up"
		var ignored *string
		return pc.QueryRow(ctx, p.setup, pgx.QueryExecModeExec, int64(pc.PgConn().PID())).Scan(&pid, &ignored)
	})
	if err != nil {
		if c != nil {
			p.discard(ctx, c)
		}
		if step == "connect" {
			if r := refused(err, p.cfg.User); r != nil {
				return nil, r // no retry fixes it
			}
		}
		if ctx.Err() != nil {
			err = errors.Join(err, ctxError(ctx))
		}
		return nil, wrap(step, notQueuedError{err})
	}
	if p.setup == "" {
		return c, nil
	}
	pc := c.Conn
	if uint32(pid) != pc.PgConn().PID() {
		c.close()
		return nil, &PoolerError{ConnPID: pc.PgConn().PID(), BackendPID: uint32(pid)}
	}
	c.pid = uint32(pid)
	return c, nil
}

// netConn unwraps TLS to the TCP connection.
func netConn(nc net.Conn) net.Conn {
	for {
		u, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			return nc
		}
		nc = u.NetConn()
	}
}
