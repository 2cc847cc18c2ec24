package redlock

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// loopPair is a client conn of l's node 0 and the server end of its TCP
// connection (loopback only).
func loopPair(t *testing.T) (*Locker, *conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	l, err := New([]string{ln.Addr().String()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c := newConn(nc)
	if !l.nodes[0].track(c) {
		t.Fatal("node closed")
	}
	t.Cleanup(func() {
		_ = srv.Close()
		_ = l.Close()
	})
	return l, c, srv
}

// TestLateClientStillReadsAReplyThatCameInTime: the client was not
// scheduled until after the operation's deadline, but the node's reply
// had come in time: it is read (readGrace), not counted as a timeout,
// which under load made Release fail and left keys locked for the TTL.
func TestLateClientStillReadsAReplyThatCameInTime(t *testing.T) {
	l, c, srv := loopPair(t)
	if _, err := srv.Write([]byte(":1\r\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the reply is in the socket buffer
	if err := c.nc.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	var r result
	var keep *conn
	l.receive(context.Background(), 0, c, 1, &r, nil, &keep)
	if r.err != nil || r.v != int64(1) {
		t.Fatalf("reply that had arrived: v=%v err=%v", r.v, r.err)
	}
	if keep != c {
		t.Fatal("connection not kept for reuse")
	}
}

// TestLateClientStillSends: a request whose operation's deadline passed
// before the client got to write it is written all the same (writeGrace);
// failing the write left a Release unsent and its key locked.
func TestLateClientStillSends(t *testing.T) {
	l, c, srv := loopPair(t)
	var r result
	if !l.send(0, c, [][]string{{"PING"}}, time.Now().Add(-time.Second), &r) {
		t.Fatalf("send with a passed deadline: %v", r.err)
	}
	_ = srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(srv).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "*1") {
		t.Fatalf("server read %q, %v", line, err)
	}
	l.nodes[0].put(c)
}
