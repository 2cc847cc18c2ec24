package pgadvisory

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/distlock/distlock"
)

// fakeServer accepts connections on loopback and hands the n-th (from 0)
// to serve; the test's cleanup closes the listener and joins.
func fakeServer(t *testing.T, serve func(n int, c net.Conn)) (addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			serve(n, c)
			_ = c.Close()
		}
	}()
	return ln.Addr().String()
}

// refuseTLS reads a client's SSLRequest and answers 'N' (no TLS).
func refuseTLS(c net.Conn) {
	buf := make([]byte, 8)
	if _, err := io.ReadFull(c, buf); err == nil {
		_, _ = c.Write([]byte("N"))
	}
	_, _ = io.Copy(io.Discard, c) // until the client closes it
}

// denyPassword reads a client's startup message and answers with the
// ErrorResponse of a wrong password (28P01).
func denyPassword(c net.Conn) {
	var n uint32
	if binary.Read(c, binary.BigEndian, &n) != nil || n < 4 {
		return
	}
	if _, err := io.CopyN(io.Discard, c, int64(n-4)); err != nil {
		return
	}
	body := "SFATAL\x00C28P01\x00Mpassword authentication failed for user \"app\"\x00\x00"
	msg := binary.BigEndian.AppendUint32([]byte{'E'}, uint32(4+len(body)))
	_, _ = c.Write(append(msg, body...))
}

// connectErr connects to addr with sslmode and returns the error.
func connectErr(t *testing.T, addr, sslmode string) error {
	t.Helper()
	cfg, err := pgx.ParseConfig("postgres://app:s3cretpw@" + addr + "/db?connect_timeout=2&sslmode=" + sslmode)
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
	return err
}

// TestPreferFallbackFailureIsNotTLS: under sslmode=prefer (pgx's
// default) against a server without TLS, pgx asks for TLS, is refused
// ('N'), and retries in plaintext. When that attempt fails for a passing
// reason (here the server closes it, as a restarting server does), the
// joined error still holds the refusal line; it must stay retryable.
func TestPreferFallbackFailureIsNotTLS(t *testing.T) {
	addr := fakeServer(t, func(n int, c net.Conn) {
		if n%2 == 0 {
			refuseTLS(c)
		} // the plaintext attempt: closed at once
	})
	err := connectErr(t, addr, "prefer")
	if !strings.Contains(err.Error(), "server refused TLS connection") {
		t.Fatalf("the fake server did not refuse TLS: %v", err)
	}
	if r := refused(err, "app"); r != nil {
		t.Fatalf("a closed plaintext fallback is classed as a refusal: %v", r)
	}
}

// TestRequireRefusedTLSIsTLS: under sslmode=require there is no
// plaintext fallback, so a server refusing TLS is distlock.ErrTLS.
func TestRequireRefusedTLSIsTLS(t *testing.T) {
	addr := fakeServer(t, func(_ int, c net.Conn) { refuseTLS(c) })
	err := connectErr(t, addr, "require")
	if r := refused(err, "app"); !errors.Is(r, distlock.ErrTLS) {
		t.Fatalf("refused(%v) = %v, want distlock.ErrTLS", err, r)
	}
}

// TestPreferFallbackWrongPasswordIsAccessDenied: a wrong password on the
// plaintext fallback after a TLS refusal is distlock.ErrAccessDenied,
// not a TLS mismatch.
func TestPreferFallbackWrongPasswordIsAccessDenied(t *testing.T) {
	addr := fakeServer(t, func(n int, c net.Conn) {
		if n%2 == 0 {
			refuseTLS(c)
		} else {
			denyPassword(c)
		}
	})
	err := connectErr(t, addr, "prefer")
	r := refused(err, "app")
	if !errors.Is(r, distlock.ErrAccessDenied) || errors.Is(r, distlock.ErrTLS) {
		t.Fatalf("refused(%v) = %v, want distlock.ErrAccessDenied only", err, r)
	}
	if strings.Contains(r.Error(), "s3cretpw") {
		t.Fatalf("the error holds the password: %v", r)
	}
}

// TestRefusedAttempts classifies joined attempt errors as pgx builds
// them: refused credentials win from any attempt; a TLS refusal counts
// only when no attempt failed for a passing reason.
func TestRefusedAttempts(t *testing.T) {
	const at = "127.0.0.1:5432 (db): "
	noTLS := errors.New(at + "tls error: server refused TLS connection")
	handshake := errors.New(at + "tls error: remote error: tls: certificate required")
	cert := errors.New(at + "tls error: tls: failed to verify certificate: x509: certificate signed by unknown authority")
	eof := errors.New(at + "failed to receive message: unexpected EOF")
	reset := errors.New(at + "dial error: read tcp: connection reset by peer")
	pg := func(code, msg string) error {
		return fmt.Errorf(at+"server error: %w", &pgconn.PgError{Severity: "FATAL", Code: code, Message: msg})
	}
	password := pg("28P01", `password authentication failed for user "app"`)
	noRole := pg("28000", `role "app" does not exist`)
	hbaTLS := pg("28000", `no pg_hba.conf entry for host "10.0.0.1", user "app", database "db", SSL encryption`)
	hbaPlain := pg("28000", `no pg_hba.conf entry for host "10.0.0.1", user "app", database "db", no encryption`)
	for _, tc := range []struct {
		name string
		err  error
		want error // nil: retryable
	}{
		{"TLS refused alone", noTLS, distlock.ErrTLS},
		{"TLS refused then EOF", errors.Join(noTLS, eof), nil},
		{"TLS refused then reset", errors.Join(noTLS, reset), nil},
		{"handshake refused then EOF", errors.Join(handshake, eof), nil},
		{"certificate rejected then EOF", errors.Join(cert, eof), nil},
		{"hba refuses TLS then EOF", errors.Join(hbaTLS, eof), nil},
		{"hba refuses TLS then plaintext", errors.Join(hbaTLS, hbaPlain), distlock.ErrTLS},
		{"TLS refused on every address", errors.Join(noTLS, noTLS), distlock.ErrTLS},
		{"EOF then TLS refused", errors.Join(eof, noTLS), nil},
		{"TLS refused then wrong password", errors.Join(noTLS, password), distlock.ErrAccessDenied},
		{"wrong password then EOF", errors.Join(password, eof), distlock.ErrAccessDenied},
		{"EOF then no role", errors.Join(eof, noRole), distlock.ErrAccessDenied},
		{"EOF alone", eof, nil},
		{"request timeout", fmt.Errorf("%w: 5s (%v)", errRequestTimeout, errors.Join(noTLS, noTLS)), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := refused(tc.err, "app")
			switch {
			case tc.want == nil && r != nil:
				t.Fatalf("refused = %v, want nil (retryable)", r)
			case tc.want != nil && !errors.Is(r, tc.want):
				t.Fatalf("refused = %v, want %v", r, tc.want)
			case tc.want == distlock.ErrAccessDenied && errors.Is(r, distlock.ErrTLS):
				t.Fatalf("refused = %v, want distlock.ErrAccessDenied only", r)
			}
		})
	}
}
