package testbed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// respTimeout bounds one raw command when ctx has no deadline.
const respTimeout = 5 * time.Second

// respDo sends one command to a Redis server on a fresh connection from
// dial and returns its reply, for the testbed's own probes and statistics:
// it is exactly one command, unlike a client library whose connection
// handshake sends more. It understands simple strings, errors, integers
// and bulk strings.
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

	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c.conn, b.String()); err != nil {
		return "", err
	}
	return c.read()
}

// read reads one reply, by the deadline already set.
func (c *respConn) read() (string, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("resp: empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New("redis: " + line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", fmt.Errorf("resp: bad bulk length %q", line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	default:
		return "", fmt.Errorf("resp: unsupported reply %q", line)
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
