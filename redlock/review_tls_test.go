package redlock_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redlock"
)

// TestReviewMaxClientsIsNotAccessDenied: a Redis at maxclients answers
// every new connection "-ERR max number of clients reached" and closes it.
// That is transient (a slot frees when any client leaves), yet with a
// password set the reply lands on the AUTH set-up reply and is classed
// distlock.ErrAccessDenied, so a blocked Acquire returns at once instead
// of waiting for the server to have room.
func TestReviewMaxClientsIsNotAccessDenied(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("-ERR max number of clients reached\r\n"))
			_ = c.Close()
		}
	}()
	l, err := redlock.New([]string{ln.Addr().String()}, &redlock.Options{Username: "app", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err = l.Acquire(ctx, "k")
	if errors.Is(err, distlock.ErrAccessDenied) {
		t.Fatalf("maxclients reply classed as access denied (Acquire stops retrying): %v", err)
	}
}
