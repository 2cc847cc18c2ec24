package zklock_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/testbed"
	"github.com/distlock/distlock/zklock"
)

// tlsLocker is a Locker of one server with opts (the testbed's tick).
func tlsLocker(t *testing.T, addr string, opts zklock.Options) *zklock.Locker {
	t.Helper()
	opts.ConnectTimeout = 2 * time.Second
	l, err := zklock.New([]string{addr}, withTick(&opts))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// wantUnavailable checks that err is a one-line ErrUnavailable (not an
// authorization failure) whose text has each of parts and no password.
func wantUnavailable(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	t.Logf("%s: %v", what, err)
	noSecret(t, what, err)
	if !errors.Is(err, distlock.ErrUnavailable) || errors.Is(err, distlock.ErrAccessDenied) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("%s: %v, want one line matching ErrUnavailable", what, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %q lacks %q", what, err, p)
		}
	}
}

// TestZooKeeperTLSAuth: over a TLS-only client port, with digest
// credentials, a Locker (by options and by a zk:// URL with tls_ca)
// locks, hands the key on and keeps its lease across a reconnection, at
// the default TTL; a client that does not trust the server's certificate,
// a plaintext client and a client of another host name fail with
// ErrUnavailable naming the problem, within the connect timeout.
func TestZooKeeperTLSAuth(t *testing.T) {
	testbed.RequireDocker(t)
	ca := testbed.NewCA(t)
	s := startAuthServer(t, testbed.ZooKeeperOptions{TLS: &testbed.ZooKeeperTLS{Server: ca.Server(t), CA: ca.PEM}})
	trust := &tls.Config{RootCAs: ca.Pool()}
	addr := s.Addr() // 127.0.0.1:port: the certificate names 127.0.0.1

	a := tlsLocker(t, addr, zklock.Options{TLS: trust, Username: "alice", Password: alicePW})
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, []byte(ca.PEM), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := distlock.Open(context.Background(), "zk://alice:"+url.QueryEscape(alicePW)+"@"+addr+"/distlock?tls_ca="+url.QueryEscape(caFile))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer b.Close()

	key := uniqueKey(t)
	ls := mustAcquire(t, a, key)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		lb, err := b.Acquire(ctx, key)
		if err == nil {
			err = lb.Release(ctx)
		}
		got <- err
	}()
	s.Link("").Reset() // a reconnection over TLS keeps the session and the lease
	time.Sleep(time.Second)
	select {
	case <-ls.Done():
		t.Fatalf("lease lost on a reconnection: %v", ls.Err())
	default:
	}
	if err := ls.Extend(ctx, 30*time.Second); err != nil {
		t.Fatalf("Extend after a reconnection: %v", err)
	}
	mustRelease(t, ls)
	if err := <-got; err != nil {
		t.Fatalf("the URL's Locker: %v", err)
	}

	other := testbed.NewCA(t)
	for _, tc := range []struct {
		what  string
		opts  zklock.Options
		parts []string
	}{
		{"untrusted certificate", zklock.Options{TLS: &tls.Config{RootCAs: other.Pool()}}, []string{"certificate"}},
		{"another host name", zklock.Options{TLS: &tls.Config{RootCAs: ca.Pool(), ServerName: "zk.elsewhere"}}, []string{"zk.elsewhere"}},
		{"plaintext client", zklock.Options{Username: "alice", Password: alicePW}, []string{"TLS settings may not match"}},
	} {
		l := tlsLocker(t, addr, tc.opts)
		start := time.Now()
		_, err := l.TryAcquire(context.Background(), uniqueKey(t))
		wantUnavailable(t, tc.what, err, tc.parts...)
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s: took %v", tc.what, took)
		}
	}
}

// TestZooKeeperTLSClientOfPlaintext: a TLS client of a plaintext server
// fails with ErrUnavailable hinting that the TLS settings may not match.
func TestZooKeeperTLSClientOfPlaintext(t *testing.T) {
	testbed.RequireDocker(t)
	n := testbed.StartZooKeeper(t, testbed.ZooKeeperOptions{})
	ca := testbed.NewCA(t)
	l := tlsLocker(t, n.Addr(), zklock.Options{TLS: &tls.Config{RootCAs: ca.Pool()}})
	_, err := l.TryAcquire(context.Background(), uniqueKey(t))
	wantUnavailable(t, "TLS client of a plaintext server", err, "TLS handshake", "TLS settings may not match")
}
