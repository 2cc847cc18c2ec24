package redlock

import (
	"bufio"
	"errors"
	"net"
	"os"
	"time"

	"github.com/distlock/distlock/internal/resp"
)

// The Locker speaks RESP2 itself (internal/resp), over one net.Conn per
// request in flight, so that an operation can write its request to every
// node before it reads any reply (see fanout).

// conn is one connection to a node.
type conn struct {
	nc  net.Conn // raw, or the TLS connection over it
	raw net.Conn // the TCP connection, which close closes
	br  *bufio.Reader
	bw  *bufio.Writer
	// auth names who the AUTH set-up command logs in as ("" if none is
	// sent), for its error; tls says whether nc is TLS, for the hint of
	// a connection that fails before its first reply.
	auth string
	tls  bool
	// fresh: no reply read yet (see next).
	fresh bool
	// setup counts the replies to the set-up commands (AUTH, SELECT,
	// SCRIPT LOAD) of a new connection, which are written with its first
	// request; the first reader checks them before anything else.
	setup int
	// pending counts replies still to come that nobody waits for (a fence
	// write-back, a request abandoned at its deadline); the next reader
	// discards them first.
	pending int
}

func newConn(nc net.Conn) *conn {
	return &conn{nc: nc, raw: nc, br: bufio.NewReaderSize(nc, 4096), bw: bufio.NewWriterSize(nc, 4096), fresh: true}
}

// close closes the TCP connection. A TLS connection is not sent a
// close_notify, whose write could block on a frozen node.
func (c *conn) close() { _ = c.raw.Close() }

// write buffers one command; flush sends it.
func (c *conn) write(args ...string) { resp.WriteCommand(c.bw, args...) }

// errSetup is an error reply to a set-up command.
var errSetup = errors.New("connection set-up")

// setUp buffers a set-up command, sent with the first request.
func (c *conn) setUp(args ...string) {
	c.write(args...)
	c.setup++
}

// errPartial marks a read that timed out in the middle of a reply: the
// connection cannot be used again.
var errPartial = errors.New("reply cut off")

// next checks the set-up replies, discards the pending replies, then
// reads one reply. An error other than a timeout before a new connection's
// first reply says what the server may want (see firstReplyError). If the deadline passes before the first byte of a
// reply arrives, the error matches os.ErrDeadlineExceeded and the
// connection stays usable (with the unread replies counted in setup and
// pending); after a partial reply it matches errPartial too. An error
// reply to a set-up command is returned as an error matching errSetup
// (not a resp.Error): the connection cannot be used.
func (c *conn) next() (any, error) {
	v, err := c.next1()
	if err != nil && c.fresh && !clean(err) && !errors.Is(err, errSetup) {
		err = firstReplyError(c, err)
	}
	if err == nil {
		c.fresh = false
	}
	return v, err
}

// next1 is next without the hint.
func (c *conn) next1() (any, error) {
	for c.setup > 0 {
		if _, err := c.br.Peek(1); err != nil {
			return nil, err
		}
		v, err := resp.ReadReply(c.br)
		if err != nil {
			return nil, errors.Join(errPartial, err)
		}
		c.setup--
		who := c.auth
		c.auth = "" // only the first set-up reply answers AUTH
		if se, ok := v.(resp.Error); ok {
			return nil, setupError(se, who)
		}
	}
	for c.pending > 0 {
		if _, err := c.br.Peek(1); err != nil {
			return nil, err
		}
		if _, err := resp.ReadReply(c.br); err != nil {
			return nil, errors.Join(errPartial, err)
		}
		c.pending--
	}
	if _, err := c.br.Peek(1); err != nil {
		return nil, err
	}
	v, err := resp.ReadReply(c.br)
	if err != nil {
		return nil, errors.Join(errPartial, err)
	}
	return v, nil
}

// clean reports whether err left the connection usable: a timeout before
// any byte of the reply.
func clean(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, errPartial)
}

// roundTrip sends cmds and reads one reply to each, all by deadline. A
// server error reply is returned as the error of the whole call.
func (c *conn) roundTrip(deadline time.Time, cmds ...[]string) ([]any, error) {
	if err := c.nc.SetDeadline(deadline); err != nil {
		return nil, err
	}
	for _, cmd := range cmds {
		c.write(cmd...)
	}
	if err := c.bw.Flush(); err != nil {
		return nil, err
	}
	out := make([]any, len(cmds))
	var first error
	for i := range cmds {
		v, err := c.next()
		if err != nil {
			return nil, err
		}
		if se, ok := v.(resp.Error); ok && first == nil {
			first = se
		}
		out[i] = v
	}
	return out, first
}
