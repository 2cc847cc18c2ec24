package redlock

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/resp"
)

// TestLateCleanupSurvivesCtxEndingAsFanoutReturns: node 0 does not answer
// the request by the fan-out's deadline, so the connection goes to the late
// clean-up; ctx ends just then, before fanout's wait. The late clean-up
// must only start after wait: started earlier (from receive), it could be
// on the connection when ctx's AfterFunc sets a past deadline on it, its
// read would fail and the connection be closed, which on the acquire path
// leaves the unlock unsent and the key locked on that node for the TTL.
func TestLateCleanupSurvivesCtxEndingAsFanoutReturns(t *testing.T) {
	l, c, srv := loopPair(t)
	l.nodes[0].put(c) // the fan-out takes it as a ready connection

	request := []string{"SET", "k", "token", "NX", "PX", "30000"}
	cleanup := []string{"DEL", "k"}
	cleanupSeen := make(chan struct{})
	answer := make(chan struct{})
	served := make(chan error, 1)
	go func() { served <- serveLateRequest(srv, request, cleanup, cleanupSeen, answer) }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	testHookBeforeWait = func() {
		// Let a late clean-up that was started too early reach its read,
		// end ctx, and give the AfterFunc time to hit that read.
		select {
		case <-cleanupSeen:
		case <-time.After(20 * time.Millisecond):
		}
		cancel()
		time.Sleep(20 * time.Millisecond)
		close(answer)
	}
	t.Cleanup(func() { testHookBeforeWait = nil })

	late, kept := observedLateCleanup(l, cleanup)
	res, conns := l.fanout(ctx, time.Now().Add(30*time.Millisecond),
		func(int) [][]string { return [][]string{request} }, late)
	if !res[0].late || conns[0] != nil {
		t.Fatalf("node 0 should have gone late: late=%v conn=%v err=%v", res[0].late, conns[0], res[0].err)
	}

	expectKept(t, kept, "the late clean-up")
	if err := <-served; err != nil {
		t.Errorf("server end: %v", err)
	}
}

// observedLateCleanup returns a late func that runs l's lateCleanup of
// cleanup and then reports on kept whether the connection went back to
// the node's idle pool, which it does only if the clean-up's round trip
// succeeded.
func observedLateCleanup(l *Locker, cleanup []string) (func(int, *conn), chan bool) {
	kept := make(chan bool, 1)
	inner := l.lateCleanup(time.Second, func(int) []string { return cleanup }, nil)
	return func(i int, lc *conn) {
		inner(i, lc)
		kept <- l.nodes[i].pooled(lc)
	}, kept
}

// expectKept waits for what's late clean-up to report and fails the test
// if it lost its connection or never ran.
func expectKept(t *testing.T, kept chan bool, what string) {
	t.Helper()
	select {
	case ok := <-kept:
		if !ok {
			t.Errorf("%s's round trip failed and its connection was closed: ctx's end cut it", what)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not run", what)
	}
}

// serveLateRequest plays node 0 on srv: it reads request and then cleanup
// (closing cleanupSeen once cleanup is in), answers neither until answer
// is closed, then answers both. It reports what went wrong, if anything.
func serveLateRequest(srv net.Conn, request, cleanup []string, cleanupSeen, answer chan struct{}) error {
	return answerLateRequest(srv, bufio.NewReader(srv), request, cleanup, cleanupSeen, answer)
}

// answerLateRequest is serveLateRequest reading from br, srv's reader
// (which may have read past what its caller consumed).
func answerLateRequest(srv net.Conn, br *bufio.Reader, request, cleanup []string, cleanupSeen, answer chan struct{}) error {
	if err := expectCommand(srv, br, request); err != nil {
		return fmt.Errorf("reading the request: %w", err)
	}
	err := expectCommand(srv, br, cleanup)
	close(cleanupSeen)
	<-answer
	if err != nil {
		return fmt.Errorf("reading the clean-up: %w", err)
	}
	_ = srv.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := srv.Write([]byte("+OK\r\n:1\r\n")); err != nil {
		return fmt.Errorf("answering: %w", err)
	}
	return nil
}

// expectCommand reads one RESP command from br (srv's reader, by a 5 s
// deadline) and reports an error unless it is want.
func expectCommand(srv net.Conn, br *bufio.Reader, want []string) error {
	_ = srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	v, err := resp.ReadReply(br)
	if err != nil {
		return err
	}
	args, _ := v.([]any)
	got := make([]string, len(args))
	for i, a := range args {
		got[i], _ = a.(string)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("got command %q, want %q", got, want)
	}
	return nil
}

// pooled reports whether c is one of n's idle connections (handed back
// with put, not closed).
func (n *node) pooled(c *conn) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Contains(n.idle, c)
}

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
// had come in time: it is read (readGrace), not counted as a timeout
// (which would fail a Release and leave its key locked for the TTL).
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
// before the client got to write it is written all the same (writeGrace),
// so that a Release is not left unsent and its key locked.
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

// TestDialedLateCleanupSurvivesCtxEndingAsFanoutReturns is
// TestLateCleanupSurvivesCtxEndingAsFanoutReturns on the dial path: node 0
// has no idle connection, so fanout dials it on its own goroutine, which
// sends the request and reads the replies. The node answers the
// connection's set-up but not the request by the fan-out's deadline, so
// the connection goes to the late clean-up; ctx ends just then, before the
// dial goroutine's wait. The late clean-up must only start after that
// wait, or ctx's AfterFunc sets a past deadline under its read and the
// connection is closed with the clean-up unanswered.
func TestDialedLateCleanupSurvivesCtxEndingAsFanoutReturns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	l, err := New([]string{ln.Addr().String()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })

	request := []string{"SET", "k", "token", "NX", "PX", "30000"}
	cleanup := []string{"DEL", "k"}
	cleanupSeen := make(chan struct{})
	answer := make(chan struct{})
	var answerOnce sync.Once
	release := func() { answerOnce.Do(func() { close(answer) }) }
	t.Cleanup(release) // if the hook never ran
	served := make(chan error, 1)
	go func() { served <- serveDialedLateRequest(ln, request, cleanup, cleanupSeen, answer) }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hooked := false
	testHookBeforeDialWait = func() {
		hooked = true
		// Let a late clean-up that was started too early reach its read,
		// end ctx, and give the AfterFunc time to hit that read.
		select {
		case <-cleanupSeen:
		case <-time.After(20 * time.Millisecond):
		}
		cancel()
		time.Sleep(20 * time.Millisecond)
		release()
	}
	t.Cleanup(func() { testHookBeforeDialWait = nil })

	late, kept := observedLateCleanup(l, cleanup)
	res, conns := l.fanout(ctx, time.Now().Add(250*time.Millisecond), // room for the dial and its set-up on a loaded host
		func(int) [][]string { return [][]string{request} }, late)
	if !hooked {
		t.Fatalf("node 0 was not dialled: err=%v", res[0].err)
	}
	if !res[0].late || conns[0] != nil {
		t.Fatalf("node 0 should have gone late: late=%v conn=%v err=%v", res[0].late, conns[0], res[0].err)
	}

	expectKept(t, kept, "the dialled late clean-up")
	if err := <-served; err != nil {
		t.Errorf("server end: %v", err)
	}
}

// serveDialedLateRequest plays node 0 on ln: it accepts the fan-out's
// connection, answers its set-up (a SCRIPT LOAD of every script, with the
// script's SHA), then serves request and cleanup as serveLateRequest does.
// It closes the connection on return and reports what went wrong, if
// anything.
func serveDialedLateRequest(ln net.Listener, request, cleanup []string, cleanupSeen, answer chan struct{}) (err error) {
	defer func() {
		if err != nil { // unblock the test's hook
			select {
			case <-cleanupSeen:
			default:
				close(cleanupSeen)
			}
		}
	}()
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
	srv, err := ln.Accept()
	if err != nil {
		return fmt.Errorf("accepting: %w", err)
	}
	defer srv.Close()
	br := bufio.NewReader(srv)
	var replies []byte
	for _, s := range allScripts {
		if err := expectCommand(srv, br, []string{"SCRIPT", "LOAD", s.src}); err != nil {
			return fmt.Errorf("reading the set-up: %w", err)
		}
		replies = fmt.Appendf(replies, "$%d\r\n%s\r\n", len(s.sha), s.sha)
	}
	_ = srv.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := srv.Write(replies); err != nil {
		return fmt.Errorf("answering the set-up: %w", err)
	}
	return answerLateRequest(srv, br, request, cleanup, cleanupSeen, answer)
}
