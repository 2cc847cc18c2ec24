package pgadvisory_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/pgadvisory"
	"github.com/distlock/distlock/testbed"
)

const (
	tlsUser = "locker"
	tlsPass = "s3cret-pg-pw"
)

// tlsServer is a Postgres server with ssl on, whose user tlsUser
// (password tlsPass) may connect over TLS only.
type tlsServer struct {
	*testbed.PostgresNode
	ca     *testbed.CA
	caFile string
}

func startTLSServer(t *testing.T) *tlsServer {
	t.Helper()
	testbed.RequireDocker(t)
	ca := testbed.NewCA(t)
	p := testbed.StartPostgres(t, testbed.PostgresOptions{
		TLS:   &testbed.PostgresTLS{CA: ca, Required: true},
		Users: []testbed.PostgresPasswordUser{{Name: tlsUser, Password: tlsPass}},
	})
	return &tlsServer{PostgresNode: p, ca: ca, caFile: writePEM(t, "ca.pem", ca.PEM)}
}

func writePEM(t *testing.T, name, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// url is a URL of the server's link "a" as tlsUser with password pw,
// host ("127.0.0.1" or "localhost") and the query params.
func (s *tlsServer) url(pw, host, params string) string {
	_, port, _ := net.SplitHostPort(s.Link("a").Addr())
	return fmt.Sprintf("postgres://%s:%s@%s/%s?%s", tlsUser, pw, net.JoinHostPort(host, port), testbed.PostgresDB, params)
}

func open(t *testing.T, u string) distlock.Locker {
	t.Helper()
	l, err := distlock.Open(context.Background(), u)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// tlsSessions counts tlsUser's sessions that use TLS.
func (s *tlsServer) tlsSessions(t *testing.T) int64 {
	t.Helper()
	n, err := s.QueryInt(context.Background(),
		"SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.usename = $1 AND s.ssl", tlsUser)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPostgresTLSVerifyFull: with sslmode=verify-full and the test's CA
// as sslrootcert, by IP address and by name, a password user acquires,
// extends and releases over TLS (the server sees a TLS session), at the
// default TTL; a waiter is handed the lock with a higher fence. A
// ConnConfig given to New with its own TLSConfig works as well.
func TestPostgresTLSVerifyFull(t *testing.T) {
	s := startTLSServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, host := range []string{"127.0.0.1", "localhost"} {
		u := s.url(tlsPass, host, "sslmode=verify-full&sslrootcert="+s.caFile)
		a, b := open(t, u), open(t, u)
		first, err := a.Acquire(ctx, "k-"+host)
		if err != nil {
			t.Fatalf("%s: Acquire: %v", host, err)
		}
		if n := s.tlsSessions(t); n < 1 {
			t.Fatalf("%s: %d TLS sessions of %s while holding the lock", host, n, tlsUser)
		}
		if err := first.Extend(ctx, 30*time.Second); err != nil {
			t.Fatalf("%s: Extend: %v", host, err)
		}
		got := make(chan distlock.Lease, 1)
		errc := make(chan error, 1)
		go func() {
			ls, err := b.Acquire(ctx, "k-"+host)
			errc <- err
			got <- ls
		}()
		time.Sleep(200 * time.Millisecond)
		if err := first.Release(ctx); err != nil {
			t.Fatalf("%s: Release: %v", host, err)
		}
		if err := <-errc; err != nil {
			t.Fatalf("%s: waiter: %v", host, err)
		}
		second := <-got
		if second.Fence() <= first.Fence() {
			t.Fatalf("%s: waiter's fence %d not above %d", host, second.Fence(), first.Fence())
		}
		if err := second.Release(ctx); err != nil {
			t.Fatalf("%s: waiter's Release: %v", host, err)
		}
	}

	cfg, err := pgx.ParseConfig(s.url(tlsPass, "127.0.0.1", "sslmode=disable"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLSConfig = &tls.Config{RootCAs: s.ca.Pool(), ServerName: "127.0.0.1"}
	l, err := pgadvisory.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ls, err := l.TryAcquire(ctx, "cfg")
	if err != nil {
		t.Fatalf("TryAcquire with ConnConfig.TLSConfig: %v", err)
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresTLSRefusals: verify-full against a CA that did not sign the
// server's certificate, a wrong password, and sslmode=disable for a user
// the server accepts over TLS only each end a blocking Acquire at once
// with a one-line error matching distlock.ErrTLS or ErrAccessDenied (and
// so ErrUnavailable) that names the problem
// (and the user), never the password.
func TestPostgresTLSRefusals(t *testing.T) {
	s := startTLSServer(t)
	other := writePEM(t, "other.pem", testbed.NewCA(t).PEM)
	cases := []struct {
		name     string
		url      string
		sentinel error
		words    []string
	}{
		{"untrusted CA", s.url(tlsPass, "127.0.0.1", "sslmode=verify-full&sslrootcert="+other),
			distlock.ErrTLS, []string{"pgadvisory: server certificate rejected", "x509"}},
		{"wrong password", s.url(tlsPass+"-wrong", "127.0.0.1", "sslmode=verify-full&sslrootcert="+s.caFile),
			distlock.ErrAccessDenied, []string{"pgadvisory: authentication failed", `"locker"`}},
		{"plaintext", s.url(tlsPass, "127.0.0.1", "sslmode=disable"),
			distlock.ErrTLS, []string{"pgadvisory: the server accepts user", "only over TLS", "TLS settings may not match the server"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := open(t, tc.url)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			_, err := l.Acquire(ctx, "k")
			other := distlock.ErrTLS
			if tc.sentinel == distlock.ErrTLS {
				other = distlock.ErrAccessDenied
			}
			if !errors.Is(err, tc.sentinel) || !errors.Is(err, distlock.ErrUnavailable) || errors.Is(err, other) {
				t.Fatalf("Acquire: %v, want %v (not %v)", err, tc.sentinel, other)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Fatalf("Acquire took %v", took)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || strings.Contains(msg, tlsPass) {
				t.Fatalf("error of several lines or with the password: %q", msg)
			}
			for _, w := range tc.words {
				if !strings.Contains(msg, w) {
					t.Fatalf("error %q does not say %q", msg, w)
				}
			}
			_, err = l.TryAcquire(ctx, "k")
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("TryAcquire: %v, want %v", err, tc.sentinel)
			}
			t.Log(msg)
		})
	}
}

// TestOpenTLSParams: the shared tls_ parameters are refused in Postgres
// URLs, naming pgx's; URL errors never show the password.
func TestOpenTLSParams(t *testing.T) {
	for _, u := range []string{
		"postgres://u:" + tlsPass + "@h/db?tls_ca=/x",
		"postgres://u:" + tlsPass + "@h/db?tls=true",
		"postgres://u:" + tlsPass + "@h/db?ttl=bogus",
		"postgres://u:" + tlsPass + "@h/db?sslmode=bogus",
	} {
		l, err := distlock.Open(context.Background(), u)
		if err == nil {
			_ = l.Close()
			t.Fatalf("Open %s: no error", u)
		}
		if !errors.Is(err, distlock.ErrInvalidArgument) || strings.Contains(err.Error(), tlsPass) {
			t.Fatalf("Open: %v", err)
		}
		if strings.Contains(u, "tls") && !strings.Contains(err.Error(), "sslrootcert") {
			t.Fatalf("Open %s: %v does not name sslrootcert", u, err)
		}
	}
}
