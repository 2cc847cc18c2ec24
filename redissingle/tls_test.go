package redissingle_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redissingle"
	"github.com/distlock/distlock/testbed"
)

// aclPassword is the password of the ACL user "app" of the TLS servers
// below: no error or printed value may contain it.
const aclPassword = "Tls-Acl-pw-7f3q"

// tlsServer is a Redis serving TLS only, with the ACL user "app".
type tlsServer struct {
	node *testbed.RedisNode
	ca   *testbed.CA
}

// startTLSRedis starts a Redis serving TLS only, with the ACL user app and
// the default user disabled; authClients makes it require a client
// certificate.
func startTLSRedis(t *testing.T, authClients bool) *tlsServer {
	t.Helper()
	testbed.RequireDocker(t)
	ca := testbed.NewCA(t)
	pair := ca.Server(t)
	n := testbed.StartRedis(t, 1, testbed.RedisOptions{
		TLS: &pair, CA: ca.PEM, TLSAuthClients: authClients,
		Users: []testbed.RedisUser{{Name: "app", Password: aclPassword}},
	})[0]
	return &tlsServer{node: n, ca: ca}
}

// client returns a client to s as user with password over tlsc (nil:
// plaintext), closed when the test ends. Its settings are go-redis's
// defaults but for a bounded dial, so a refused connection fails fast.
func (s *tlsServer) client(t testing.TB, tlsc *tls.Config, user, password string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                     s.node.Addr(),
		TLSConfig:                tlsc,
		Username:                 user,
		Password:                 password,
		DialTimeout:              2 * time.Second,
		DialerRetries:            1,
		DisableIdentity:          true, // CLIENT SETINFO needs Redis 7.2
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// trusting is a client TLS configuration trusting s's CA.
func (s *tlsServer) trusting() *tls.Config {
	return &tls.Config{RootCAs: s.ca.Pool(), MinVersion: tls.VersionTLS12}
}

// lockerOver returns a Locker over c with default options, closed when the
// test ends.
func lockerOver(t testing.TB, c redis.UniversalClient) *redissingle.Locker {
	t.Helper()
	l, err := redissingle.New(c, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// TestTLSACLLifecycle acquires, extends and releases a lock over TLS as an
// ACL user at the default TTL, and hands it to a waiting Locker, whose
// fence is higher.
func TestTLSACLLifecycle(t *testing.T) {
	s := startTLSRedis(t, false)
	ctx := context.Background()
	l1 := lockerOver(t, s.client(t, s.trusting(), "app", aclPassword))
	l2 := lockerOver(t, s.client(t, s.trusting(), "app", aclPassword))
	key := uniqueKey(t)

	held := mustAcquire(t, l1, key)
	if err := held.Extend(ctx, distlock.DefaultTTL); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if left := time.Until(held.ValidUntil()); left < 25*time.Second {
		t.Fatalf("validity %v after Extend at the default TTL", left)
	}
	got := acquireAsync(t, ctx, l2, key)
	select {
	case ls := <-got:
		t.Fatalf("waiter acquired a held lock: %v", ls)
	case <-time.After(300 * time.Millisecond):
	}
	mustRelease(t, held)
	select {
	case next := <-got:
		if next == nil {
			t.Fatal("waiter failed")
		}
		if next.Fence() <= held.Fence() {
			t.Fatalf("fence %d after %d", next.Fence(), held.Fence())
		}
		mustRelease(t, next)
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not handed the lock over TLS within 10s")
	}
	if out := fmt.Sprintf("%v %+v %#v", l1, l1, l1); strings.Contains(out, aclPassword) || !strings.Contains(out, `user "app" tls`) {
		t.Fatalf("Locker printed as %q", out)
	}
}

// wantConnErr checks that err matches ErrUnavailable and, of
// distlock.ErrAccessDenied and distlock.ErrTLS, sentinel only (neither if
// nil), names the backend and want, and is one line without the
// password.
func wantConnErr(t *testing.T, err, sentinel error, want string) {
	t.Helper()
	if !errors.Is(err, distlock.ErrUnavailable) {
		t.Fatalf("error %v, want ErrUnavailable", err)
	}
	for _, s := range []error{distlock.ErrAccessDenied, distlock.ErrTLS} {
		if errors.Is(err, s) != (s == sentinel) {
			t.Fatalf("error %v: errors.Is(err, %v) = %v, want %v", err, s, !(s == sentinel), s == sentinel)
		}
	}
	msg := fmt.Sprintf("%v %+v", err, err)
	if !strings.Contains(msg, want) || !strings.Contains(msg, "redissingle: ") || strings.Contains(msg, aclPassword) || strings.Contains(msg, "\n") {
		t.Fatalf("error %q: want one line naming %q, without the password", err, want)
	}
}

// TestAuthTLSRefusals checks the error of each bad setting against a
// TLS-only server with an ACL user: a wrong password, an unknown user, no
// credentials, a CA that does not sign the server's certificate, a server
// name the certificate does not carry, and a plaintext client. Each is
// TryAcquire's error; a blocked Acquire returns refused credentials
// (distlock.ErrAccessDenied) and a refused certificate (distlock.ErrTLS)
// at once, and keeps trying on a closed connection (a plaintext client of
// a TLS server, or a server restarting) until its context ends, still
// naming the cause.
func TestAuthTLSRefusals(t *testing.T) {
	s := startTLSRedis(t, false)
	other := testbed.NewCA(t)
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		tls       *tls.Config
		user, pwd string
		sentinel  error
		want      string
	}{
		{"WrongPassword", s.trusting(), "app", aclPassword + "x", distlock.ErrAccessDenied, `authentication failed for user "app"`},
		{"UnknownUser", s.trusting(), "nobody", aclPassword, distlock.ErrAccessDenied, `authentication failed for user "nobody"`},
		{"NoCredentials", s.trusting(), "", "", distlock.ErrAccessDenied, `authentication failed for user "default"`},
		{"UntrustedCertificate", &tls.Config{RootCAs: other.Pool()}, "app", aclPassword, distlock.ErrTLS, "certificate was refused"},
		{"WrongServerName", &tls.Config{RootCAs: s.ca.Pool(), ServerName: "elsewhere.example"}, "app", aclPassword, distlock.ErrTLS, "certificate was refused"},
		{"PlaintextClient", nil, "app", aclPassword, nil, "TLS settings may not match"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := lockerOver(t, s.client(t, c.tls, c.user, c.pwd))
			_, err := l.TryAcquire(ctx, uniqueKey(t))
			wantConnErr(t, err, c.sentinel, c.want)
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_, err = l.Acquire(actx, uniqueKey(t))
			if c.sentinel != nil {
				// No retry fixes it: Acquire returns it at once.
				if actx.Err() != nil || errors.Is(err, distlock.ErrNotAcquired) {
					t.Fatalf("blocked Acquire: %q, want %v before its deadline", err, c.sentinel)
				}
				wantConnErr(t, err, c.sentinel, c.want)
				return
			}
			// A blocked Acquire keeps trying; its error joins the
			// context's and the last attempt's.
			if msg := fmt.Sprintf("%v", err); !errors.Is(err, distlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) ||
				!errors.Is(err, distlock.ErrUnavailable) || !strings.Contains(msg, c.want) || strings.Contains(msg, aclPassword) {
				t.Fatalf("blocked Acquire: %q, want ErrNotAcquired, the deadline and ErrUnavailable naming %q", err, c.want)
			}
		})
	}
}

// TestTLSClientToPlaintextServer checks that a TLS client of a plaintext
// server is told the server does not speak TLS (distlock.ErrTLS), or,
// if the handshake times out, that TLS settings may not match.
func TestTLSClientToPlaintextServer(t *testing.T) {
	s := startRedis(t)
	c := redis.NewClient(&redis.Options{
		Addr: s.node.Addr(), TLSConfig: &tls.Config{InsecureSkipVerify: true}, DialTimeout: time.Second, DialerRetries: 1, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { _ = c.Close() })
	_, err := lockerOver(t, c).TryAcquire(context.Background(), uniqueKey(t))
	if errors.Is(err, context.DeadlineExceeded) {
		// The server may not answer the handshake in time (under load):
		// a timeout, which says TLS may be the cause but is no proof.
		wantConnErr(t, err, nil, "TLS settings may not match the server")
		return
	}
	wantConnErr(t, err, distlock.ErrTLS, "does not speak TLS")
}

// TestTLSClientCertificateURL opens Lockers by rediss:// URL against a
// server that requires client certificates: with tls_ca, tls_cert and
// tls_key and the ACL user's credentials it locks and hands over; without
// the certificate, or with a wrong password in the URL, the first
// acquisition fails naming the cause and never the password.
func TestTLSClientCertificateURL(t *testing.T) {
	s := startTLSRedis(t, true)
	ctx := context.Background()
	dir := t.TempDir()
	pair := s.ca.Client(t, "app")
	files := map[string]string{"ca.pem": s.ca.PEM, "cert.pem": pair.CertPEM, "key.pem": pair.KeyPEM}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	base := "rediss://app:%s@" + s.node.Addr() + "/0?dial_timeout=2s&tls_ca=" + filepath.Join(dir, "ca.pem")
	withCert := base + "&tls_cert=" + filepath.Join(dir, "cert.pem") + "&tls_key=" + filepath.Join(dir, "key.pem")
	open := func(raw string) distlock.Locker {
		t.Helper()
		l, err := distlock.Open(ctx, raw)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	}

	l1, l2 := open(fmt.Sprintf(withCert, aclPassword)), open(fmt.Sprintf(withCert, aclPassword))
	if out := fmt.Sprintf("%v %+v %#v", l1, l1, l1); strings.Contains(out, aclPassword) {
		t.Fatalf("Locker printed as %q", out)
	}
	key := uniqueKey(t)
	held := mustAcquire(t, l1, key)
	got := acquireAsync(t, ctx, l2, key)
	mustRelease(t, held)
	select {
	case next := <-got:
		if next == nil {
			t.Fatal("waiter failed")
		}
		mustRelease(t, next)
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not handed the lock within 10s")
	}

	_, err := open(fmt.Sprintf(base, aclPassword)).TryAcquire(ctx, uniqueKey(t))
	wantConnErr(t, err, distlock.ErrTLS, "client certificate")
	_, err = open(fmt.Sprintf(withCert, aclPassword+"x")).TryAcquire(ctx, uniqueKey(t))
	wantConnErr(t, err, distlock.ErrAccessDenied, `authentication failed for user "app"`)
}
