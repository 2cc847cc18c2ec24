package redlock

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/resp"
)

// TestLateCleanupSurvivesCtxEndingAsFanoutReturns: node 0 does not answer
// the request by the fan-out's deadline, so the connection goes to the late
// clean-up; ctx ends just then, before fanout's wait. The late clean-up
// must only start after wait: started earlier (from receive), it was on the
// connection when ctx's AfterFunc set a past deadline on it, so its read
// failed and the connection was closed, which on the acquire path could
// leave the unlock unsent and the key locked on that node for the TTL.
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
