package etcdlock

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/distlock/distlock"
)

// TestRefusalServerPreface: gRPC's texts for a preface read that ended
// in EOF or a reset (a server or proxy closing new connections, as in a
// restart) are retryable; those showing a server that does not speak
// plaintext HTTP/2 are distlock.ErrTLS.
func TestRefusalServerPreface(t *testing.T) {
	unavailable := func(desc string) error {
		return status.Error(codes.Unavailable, `connection error: desc = "`+desc+`"`)
	}
	for _, tc := range []struct {
		err error
		tls bool
	}{
		{unavailable("error reading server preface: EOF"), false},
		{unavailable("error reading server preface: unexpected EOF"), false},
		{unavailable("error reading server preface: read tcp 127.0.0.1:50412->127.0.0.1:2379: read: connection reset by peer"), false},
		{unavailable("error reading server preface: read tcp 127.0.0.1:50412->127.0.0.1:2379: i/o timeout"), false},
		{unavailable("error reading server preface: http2: frame too large"), true},
		{unavailable("initial http2 frame from server is not a settings frame: *http2.DataFrame"), true},
		{unavailable("error reading server preface: connection error: PROTOCOL_ERROR"), true},
		{unavailable("transport: authentication handshake failed: tls: first record does not look like a TLS handshake"), true},
	} {
		r := refusal(tc.err, "app", "/p/")
		if got := errors.Is(r, distlock.ErrTLS); got != tc.tls {
			t.Errorf("refusal(%v) = %v, want ErrTLS %v", tc.err, r, tc.tls)
		}
	}
}

// TestRefusalGRPCPreface runs a gRPC call against fake servers that read
// the client's preface: one that then closes the connection is
// retryable, one answering in HTTP/1 is distlock.ErrTLS.
func TestRefusalGRPCPreface(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply string
		tls   bool
	}{
		{"closed", "", false},
		{"HTTP/1", "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
					_ = c.SetDeadline(time.Now().Add(2 * time.Second))
					_, _ = io.ReadFull(c, make([]byte, 24)) // the client's preface
					if tc.reply != "" {
						_, _ = c.Write([]byte(tc.reply))
					}
					_ = c.Close()
				}
			}()
			cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
			if err == nil {
				t.Fatal("a call to a fake server succeeded")
			}
			if !strings.Contains(err.Error(), "server preface") {
				t.Fatalf("gRPC did not report the preface: %v", err)
			}
			r := refusal(err, "app", "/p/")
			if got := errors.Is(r, distlock.ErrTLS); got != tc.tls {
				t.Fatalf("refusal(%v) = %v, want ErrTLS %v", err, r, tc.tls)
			}
		})
	}
}
