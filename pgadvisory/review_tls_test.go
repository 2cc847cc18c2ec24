package pgadvisory

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
)

// TestReviewPreferFallbackFailureIsNotTLS: with sslmode=prefer (pgx's
// default) against a server with ssl=off, pgx first asks for TLS, gets
// 'N' ("server refused TLS connection"), then connects in plaintext. If
// that plaintext attempt fails for a transient reason (here the server
// closes it, as a restarting server or a dropped connection does), the
// joined error still contains the 'N' line, and refused classes it
// distlock.ErrTLS: Acquire returns at once instead of retrying, though
// the server does accept the client's settings.
func TestReviewPreferFallbackFailureIsNotTLS(t *testing.T) {
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
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if n%2 == 0 { // the SSLRequest: refuse TLS
				buf := make([]byte, 8)
				_ = c.SetDeadline(time.Now().Add(2 * time.Second))
				if _, err := io.ReadFull(c, buf); err == nil {
					_, _ = c.Write([]byte("N"))
				}
				_, _ = io.Copy(io.Discard, c) // until pgx closes it
			}
			_ = c.Close() // the plaintext attempt: closed at once
		}
	}()
	cfg, err := pgx.ParseConfig("postgres://app:s3cretpw@" + ln.Addr().String() + "/db?sslmode=prefer&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		_ = c.Close(ctx)
		t.Fatal("connected to a fake server")
	}
	if r := refused(err, "app"); errors.Is(r, distlock.ErrTLS) {
		t.Fatalf("a closed plaintext fallback is classed as a TLS mismatch: %v", r)
	}
}
