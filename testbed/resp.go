package testbed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/distlock/distlock/internal/resp"
)

// respTimeout bounds one raw command when ctx has no deadline.
const respTimeout = 5 * time.Second

// respDo sends one command to a Redis server on a fresh connection from
// dial and returns its reply, for the testbed's own probes and statistics:
// it is exactly one command, unlike a client library whose connection
// handshake sends more. It understands simple strings, errors, integers
// and bulk strings (see respConn.read).
func respDo(ctx context.Context, dial func(context.Context) (net.Conn, error), args ...string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, respTimeout)
		defer cancel()
	}
	conn, err := dial(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return newRespConn(conn).do(ctx, args...)
}

// respConn is one raw Redis connection with its reply reader.
type respConn struct {
	conn net.Conn
	r    *bufio.Reader
}

func newRespConn(c net.Conn) *respConn { return &respConn{conn: c, r: bufio.NewReader(c)} }

// do sends one command and reads one reply, by ctx's deadline.
func (c *respConn) do(ctx context.Context, args ...string) (string, error) {
	deadline, _ := ctx.Deadline()
	if err := c.conn.SetDeadline(deadline); err != nil {
		return "", err
	}
	// Interrupt the I/O when ctx ends early.
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	if _, err := c.conn.Write(resp.AppendCommand(nil, args...)); err != nil {
		return "", err
	}
	return c.read()
}

// read reads one reply, by the deadline already set: a simple string,
// an integer (in decimal) or a bulk string. An error reply, a nil and an
// array are errors.
func (c *respConn) read() (string, error) {
	v, err := resp.ReadReply(c.r)
	if err != nil {
		return "", err
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case resp.Error:
		return "", errors.New("redis: " + string(v))
	case nil:
		return "", errors.New("resp: nil reply")
	default:
		return "", fmt.Errorf("resp: unsupported reply %#v", v)
	}
}

// infoField returns the value of field in an INFO reply.
func infoField(info, field string) (string, bool) {
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v, true
		}
	}
	return "", false
}
