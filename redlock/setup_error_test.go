package redlock_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redlock"
)

// replyServer starts a fake node that answers every new connection with
// the error reply reply (without '-' and CRLF) and closes it, as Redis
// does at maxclients; it stops with the test.
func replyServer(t *testing.T, reply string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("-" + reply + "\r\n"))
			_ = c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestSetupErrorOnlyLoginRefusalsAreAccessDenied: an error reply where a
// new connection's AUTH (or, without credentials, its first set-up
// command) is answered matches distlock.ErrAccessDenied only if it is one
// of Redis's refusals of credentials; any other reply, such as a full
// server's "ERR max number of clients reached", matches only
// distlock.ErrUnavailable and keeps its text, so a blocked Acquire keeps
// trying.
func TestSetupErrorOnlyLoginRefusalsAreAccessDenied(t *testing.T) {
	refusals := []string{
		"WRONGPASS invalid username-password pair or user is disabled.",
		"NOAUTH Authentication required.",
		"ERR invalid password",
		"ERR invalid username-password pair",
		"ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
		"ERR Client sent AUTH, but no password is set",
	}
	others := []string{
		"ERR max number of clients reached",
		"LOADING Redis is loading the dataset in memory",
		"ERR unknown command 'AUTH'",
	}
	creds := map[string]redlock.Options{
		"Password":       {Username: "app", Password: "pw"},
		"NoPassword":     {},
		"DefaultUserPwd": {Password: "pw"},
	}
	for name, opts := range creds {
		for _, reply := range append(append([]string(nil), refusals...), others...) {
			denied := false
			for _, r := range refusals {
				denied = denied || r == reply
			}
			t.Run(name+"/"+strings.Join(strings.Fields(reply)[:3], "_"), func(t *testing.T) {
				o := opts
				o.NodeTimeout = time.Second
				l, err := redlock.New([]string{replyServer(t, reply)}, &o)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				_, err = l.TryAcquire(context.Background(), "k")
				if !errors.Is(err, distlock.ErrUnavailable) {
					t.Fatalf("reply %q: error %v does not match ErrUnavailable", reply, err)
				}
				if got := errors.Is(err, distlock.ErrAccessDenied); got != denied {
					t.Fatalf("reply %q: ErrAccessDenied %v, want %v: %v", reply, got, denied, err)
				}
				if !strings.Contains(err.Error(), reply) {
					t.Errorf("error %q does not quote the reply %q", err, reply)
				}
				if strings.Contains(err.Error(), "pw") {
					t.Errorf("error %q quotes the password", err)
				}
			})
		}
	}
}

// TestSetupErrorMaxClientsKeepsAcquireWaiting: a blocked Acquire against
// a server at maxclients (with credentials, so the reply lands on the
// AUTH) keeps trying until its context ends, not returning at once with
// distlock.ErrAccessDenied.
func TestSetupErrorMaxClientsKeepsAcquireWaiting(t *testing.T) {
	addr := replyServer(t, "ERR max number of clients reached")
	l, err := redlock.New([]string{addr}, &redlock.Options{Username: "app", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const wait = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	start := time.Now()
	_, err = l.Acquire(ctx, "k")
	if errors.Is(err, distlock.ErrAccessDenied) {
		t.Fatalf("maxclients reply classed as access denied: %v", err)
	}
	if d := time.Since(start); d < wait {
		t.Fatalf("Acquire returned after %v, before its context ended (%v): %v", d, wait, err)
	}
}
