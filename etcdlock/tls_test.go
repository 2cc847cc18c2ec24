package etcdlock_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
	"github.com/distlock/distlock/testbed"
)

const (
	lockUser = "locker"
	lockPass = "s3cret-locker-pw"
)

// secureCluster is an etcd cluster serving clients over TLS (requiring
// client certificates if certAuth), with authentication on: user lockUser may read and
// write under "locks/", user "nobody" nowhere.
type secureCluster struct {
	*testbed.EtcdCluster
	ca *testbed.CA
}

func startSecure(t *testing.T, members int, certAuth bool) *secureCluster {
	t.Helper()
	testbed.RequireDocker(t)
	ca := testbed.NewCA(t)
	c := testbed.StartEtcd(t, members, testbed.EtcdOptions{
		TLS: &testbed.EtcdTLS{CA: ca, ClientCertAuth: certAuth},
		Auth: &testbed.EtcdAuth{Users: []testbed.EtcdUser{
			{Name: lockUser, Password: lockPass, Prefix: "locks/"},
			{Name: "nobody", Password: lockPass},
		}},
	})
	return &secureCluster{EtcdCluster: c, ca: ca}
}

// clientTLS trusts the cluster's CA and presents a client certificate
// for user.
func (c *secureCluster) clientTLS(t *testing.T, user string) *tls.Config {
	t.Helper()
	return &tls.Config{RootCAs: c.ca.Pool(), Certificates: []tls.Certificate{c.ca.Client(t, user).TLSCertificate(t)}}
}

// dial is etcdlock.Dial over the links named link; the Locker is closed
// when t ends.
func (c *secureCluster) dial(t *testing.T, link string, opts etcdlock.Options) (*etcdlock.Locker, error) {
	t.Helper()
	l, err := etcdlock.Dial(context.Background(), c.Endpoints(link), &opts)
	if err == nil {
		t.Cleanup(func() { _ = l.Close() })
	}
	return l, err
}

// noSecret fails the test if err's text holds the password.
func noSecret(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), lockPass) {
		t.Fatalf("error shows the password: %v", err)
	}
}

// TestEtcdTLSAuthLockCycle: over TLS with client certificates and a
// password user, at the default TTL and timeouts, a Locker acquires,
// extends and releases, a waiter on another Locker is handed the lock
// with a higher fence, and the Locker and its options never print the
// password. A URL with credentials and the tls_ parameters opens a
// Locker that works end to end.
func TestEtcdTLSAuthLockCycle(t *testing.T) {
	c := startSecure(t, 3, true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := etcdlock.Options{Prefix: "locks/", TLS: c.clientTLS(t, lockUser), Username: lockUser, Password: lockPass}
	a, err := c.dial(t, "a", opts)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	b, err := c.dial(t, "b", opts)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	if s := fmt.Sprintf("%v %+v %#v %v %+v", a, opts, opts, &opts, []etcdlock.Options{opts}); strings.Contains(s, lockPass) {
		t.Fatalf("formatting shows the password: %s", s)
	}
	first, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if err := first.Extend(ctx, 30*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	got := make(chan distlock.Lease, 1)
	waitErr := make(chan error, 1)
	go func() {
		ls, err := b.Acquire(ctx, "k")
		waitErr <- err
		got <- ls
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-waitErr:
		t.Fatalf("waiter returned while the lock was held: %v", err)
	default:
	}
	if err := first.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := <-waitErr; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	second := <-got
	if second.Fence() <= first.Fence() {
		t.Fatalf("waiter's fence %d not above the first holder's %d", second.Fence(), first.Fence())
	}
	if err := second.Release(ctx); err != nil {
		t.Fatalf("waiter's Release: %v", err)
	}

	dir := t.TempDir()
	kp := c.ca.Client(t, lockUser)
	files := map[string]string{"ca.pem": c.ca.PEM, "cert.pem": kp.CertPEM, "key.pem": kp.KeyPEM}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	u := fmt.Sprintf("etcd://%s:%s@%s/locks?tls_ca=%s&tls_cert=%s&tls_key=%s&ttl=5s", lockUser, lockPass,
		strings.Join(c.Endpoints("url"), ","), url.QueryEscape(filepath.Join(dir, "ca.pem")),
		url.QueryEscape(filepath.Join(dir, "cert.pem")), url.QueryEscape(filepath.Join(dir, "key.pem")))
	l, err := distlock.Open(ctx, u)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer l.Close()
	ls, err := l.TryAcquire(ctx, "u")
	if err != nil {
		t.Fatalf("TryAcquire over the URL's Locker: %v", err)
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("Release over the URL's Locker: %v", err)
	}
	bad := strings.Replace(u, lockPass, lockPass+"-wrong", 1)
	_, err = distlock.Open(ctx, bad)
	wantRefusal(t, err, distlock.ErrAccessDenied, "etcdlock: authentication failed", `"locker"`)
	noSecret(t, err)
}

// TestAuthEtcdRefusals (TLS without client certificates): wrong password, a user without permission on the
// prefix, and no credentials on a cluster with authentication each fail
// at once (not at the end of the context) with a one-line error naming
// the problem and the user, never the password.
func TestAuthEtcdRefusals(t *testing.T) {
	c := startSecure(t, 1, false)
	tlsOK := c.clientTLS(t, lockUser)

	start := time.Now()
	_, err := c.dial(t, "a", etcdlock.Options{Prefix: "locks/", TLS: tlsOK, Username: lockUser, Password: "wrong-" + lockPass})
	wantRefusal(t, err, distlock.ErrAccessDenied, "etcdlock: authentication failed", `"locker"`, "wrong user name or password")
	noSecret(t, err)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("wrong password took %v", took)
	}

	nobody, err := c.dial(t, "a", etcdlock.Options{Prefix: "locks/", TLS: tlsOK, Username: "nobody", Password: lockPass})
	if err != nil {
		t.Fatalf("Dial as nobody: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start = time.Now()
	_, err = nobody.Acquire(ctx, "k")
	wantRefusal(t, err, distlock.ErrAccessDenied, "etcdlock: permission denied", `"nobody"`, `"locks/"`)
	noSecret(t, err)
	_, err = nobody.TryAcquire(ctx, "k")
	wantRefusal(t, err, distlock.ErrAccessDenied, "etcdlock: permission denied")
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("permission denied took %v", took)
	}

	anon, err := c.dial(t, "a", etcdlock.Options{Prefix: "locks/", TLS: &tls.Config{RootCAs: c.ca.Pool()}})
	if err != nil {
		t.Fatalf("Dial without credentials: %v", err)
	}
	start = time.Now()
	_, err = anon.Acquire(ctx, "k")
	wantRefusal(t, err, distlock.ErrAccessDenied, "etcdlock: authentication failed", "authentication enabled")
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("no credentials took %v", took)
	}
}

// TestEtcdTLSMismatch: a client that does not trust the server's
// certificate, one without a client certificate the server requires, and
// a plaintext client of a TLS server fail with distlock.ErrTLS naming the problem,
// within the dial timeout when they authenticate at Dial and at the first
// call's first try otherwise.
func TestEtcdTLSMismatch(t *testing.T) {
	c := startSecure(t, 1, true)
	untrusted := c.clientTLS(t, lockUser)
	untrusted.RootCAs = testbed.NewCA(t).Pool()
	noCert := c.clientTLS(t, lockUser)
	noCert.Certificates = nil
	cases := []struct {
		name  string
		tls   *tls.Config
		words []string
	}{
		{"untrusted", untrusted, []string{"certificate", "x509"}},
		{"no client certificate", noCert, []string{"refused the TLS handshake"}},
		{"plaintext", nil, []string{"TLS settings may not match the server"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := c.dial(t, "a", etcdlock.Options{Prefix: "locks/", TLS: tc.tls, Username: lockUser, Password: lockPass, DialTimeout: 2 * time.Second})
			wantRefusal(t, err, distlock.ErrTLS, append([]string{"etcdlock: "}, tc.words...)...)
			noSecret(t, err)
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("Dial took %v", took)
			}
			l, err := c.dial(t, "a", etcdlock.Options{Prefix: "locks/", TLS: tc.tls})
			if err != nil {
				t.Fatalf("Dial without credentials: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start = time.Now()
			_, err = l.Acquire(ctx, "k")
			wantRefusal(t, err, distlock.ErrTLS, append([]string{"etcdlock: "}, tc.words...)...)
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("Acquire took %v", took)
			}
		})
	}
}

// TestEtcdTLSClientPlaintextServer: a TLS client of a plaintext member
// fails with distlock.ErrTLS saying the server does not speak TLS.
func TestEtcdTLSClientPlaintextServer(t *testing.T) {
	c := startMember(t)
	ca := testbed.NewCA(t)
	l, err := etcdlock.Dial(context.Background(), c.Endpoints("a"), &etcdlock.Options{TLS: &tls.Config{RootCAs: ca.Pool()}})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err = l.TryAcquire(ctx, "k")
	wantRefusal(t, err, distlock.ErrTLS, "etcdlock: ", "does not speak TLS")
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("TryAcquire took %v", took)
	}
}

// wantRefusal fails the test unless err matches sentinel
// (distlock.ErrAccessDenied or distlock.ErrTLS, not the other) and
// distlock.ErrUnavailable, is one line, and contains every word.
func wantRefusal(t *testing.T, err, sentinel error, words ...string) {
	t.Helper()
	other := distlock.ErrTLS
	if sentinel == distlock.ErrTLS {
		other = distlock.ErrAccessDenied
	}
	if !errors.Is(err, sentinel) || !errors.Is(err, distlock.ErrUnavailable) || errors.Is(err, other) {
		t.Fatalf("error %v, want %v (not %v) and ErrUnavailable", err, sentinel, other)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Fatalf("error of several lines: %q", msg)
	}
	for _, w := range words {
		if !strings.Contains(msg, w) {
			t.Fatalf("error %q does not say %q", msg, w)
		}
	}
	t.Logf("%v", err)
}
