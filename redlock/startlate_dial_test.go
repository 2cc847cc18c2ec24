package redlock

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

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
