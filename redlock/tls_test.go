package redlock_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redlock"
	"github.com/distlock/distlock/testbed"
)

// tlsPassword is the ACL password of the TLS test nodes' user; no error
// or printout may contain it.
const tlsPassword = "tls-Secret-9f3a"

// tlsCluster is 3 Redis masters serving TLS only, requiring client
// certificates, with one ACL user, alice.
type tlsCluster struct {
	*cluster
	ca     *testbed.CA
	client tls.Certificate
}

func startTLSCluster(t *testing.T) *tlsCluster {
	t.Helper()
	testbed.RequireDocker(t)
	ca := testbed.NewCA(t)
	kp := ca.Server(t)
	nodes := testbed.StartRedis(t, 3, testbed.RedisOptions{
		TLS: &kp, CA: ca.PEM, TLSAuthClients: true,
		Users: []testbed.RedisUser{{Name: "alice", Password: tlsPassword}},
	})
	return &tlsCluster{cluster: &cluster{nodes: nodes}, ca: ca, client: ca.Client(t, "locker").TLSCertificate(t)}
}

// config is a client configuration trusting the cluster's CA, with a
// client certificate.
func (c *tlsCluster) config() *tls.Config {
	return &tls.Config{RootCAs: c.ca.Pool(), Certificates: []tls.Certificate{c.client}}
}

// options are the defaults plus TLS and alice's credentials.
func (c *tlsCluster) options() *redlock.Options {
	return &redlock.Options{TLS: c.config(), Username: "alice", Password: tlsPassword}
}

// noSecret fails the test if s contains the password.
func noSecret(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(s, tlsPassword) {
		t.Fatalf("%s contains the password: %s", what, s)
	}
}

// TestRedlockTLS runs Redlock over TLS with ACL authentication on 3
// nodes at the default timeouts, then each misconfiguration.
func TestRedlockTLS(t *testing.T) {
	c := startTLSCluster(t)
	t.Run("AcquireExtendRelease", c.testTLSAcquireExtendRelease)
	t.Run("HandOff", c.testTLSHandOff)
	t.Run("URL", c.testTLSURL)
	t.Run("Errors", c.testTLSErrors)
	t.Run("NodeTLS", c.testTLSPerNode)
	t.Run("HandshakeInBackground", c.testTLSHandshakeInBackground)
}

func (c *tlsCluster) testTLSAcquireExtendRelease(t *testing.T) {
	opts := c.options()
	l := c.locker(t, "", opts)
	key := uniqueKey(t)
	ls := mustAcquire(t, l, key)
	holders := c.holders(t, key)
	if len(holders) < 2 {
		t.Fatalf("key held on nodes %v, want a majority", holders)
	}
	if err := ls.Extend(context.Background(), time.Minute); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if ttl := c.nodes[holders[0]].Admin().PTTL(context.Background(), key).Val(); ttl < 50*time.Second {
		t.Fatalf("PTTL after Extend(1m) = %v", ttl)
	}
	mustRelease(t, ls)
	// A node the release missed is sent it again in the background.
	eventually(t, 5*time.Second, "key gone from every node after Release", func() bool { return len(c.holders(t, key)) == 0 })
	for _, s := range []string{fmt.Sprintf("%v %+v %#v %s", l, l, l, l), fmt.Sprintf("%v %+v %#v", opts, opts, opts), fmt.Sprintf("%v %+v %#v", *opts, *opts, *opts)} {
		noSecret(t, "fmt of the Locker and Options", s)
		if !strings.Contains(s, "alice") {
			t.Fatalf("fmt does not name the user: %s", s)
		}
	}
	if s := l.String(); !strings.Contains(s, "tls") || !strings.Contains(s, c.nodes[2].Addr()) {
		t.Fatalf("String %q does not name the nodes and TLS", s)
	}
}

// A blocked Acquire is woken by the release's push over TLS pub/sub.
func (c *tlsCluster) testTLSHandOff(t *testing.T) {
	a := c.locker(t, "a", c.options())
	b := c.locker(t, "b", c.options())
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key)
	got := make(chan distlock.Lease, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ls, err := b.Acquire(ctx, key)
		if err != nil {
			t.Errorf("Acquire: %v", err)
		}
		got <- ls
	}()
	time.Sleep(300 * time.Millisecond) // b queued and subscribed
	released := time.Now()
	mustRelease(t, ls)
	ls2 := <-got
	if ls2 == nil {
		return
	}
	d := time.Since(released)
	t.Logf("hand-off over TLS %v", d)
	if d > 500*time.Millisecond { // PollInterval is 1 s
		t.Fatalf("hand-off took %v: no push wake-up", d)
	}
	mustRelease(t, ls2)
}

// writeFile writes content to a file in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A URL with credentials and the TLS parameters works end to end.
func (c *tlsCluster) testTLSURL(t *testing.T) {
	dir := t.TempDir()
	ca := writeFile(t, dir, "ca.pem", c.ca.PEM)
	kp := c.ca.Client(t, "url")
	cert, key := writeFile(t, dir, "cert.pem", kp.CertPEM), writeFile(t, dir, "key.pem", kp.KeyPEM)
	hosts := strings.Join(c.addrs("url"), ",")
	q := url.Values{"tls_ca": {ca}, "tls_cert": {cert}, "tls_key": {key}}.Encode()
	u := "redlock://alice:" + tlsPassword + "@" + hosts + "?" + q
	l, err := distlock.Open(context.Background(), u)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer l.Close()
	noSecret(t, "fmt of the URL's Locker", fmt.Sprintf("%v %+v %#v", l, l, l))
	ls := mustAcquire(t, l, uniqueKey(t))
	mustRelease(t, ls)

	// tls=true alone: the system's roots do not know the test CA.
	// node_timeout: under the race detector a handshake can take longer
	// than the default 50 ms, and the error would say so instead.
	l2, err := distlock.Open(context.Background(), "redlock://alice:"+tlsPassword+"@"+hosts+"?tls=true&node_timeout=1s")
	if err != nil {
		t.Fatalf("Open tls=true: %v", err)
	}
	defer l2.Close()
	_, err = l2.TryAcquire(context.Background(), uniqueKey(t))
	wantErr(t, err, distlock.ErrUnavailable)
	if !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("tls=true with an unknown CA: %v", err)
	}
	noSecret(t, "error", err.Error())

	// Bad URLs name the problem, never the password.
	for _, bad := range []string{
		"redlock://alice:" + tlsPassword + "@" + hosts + "?tls_ca=" + filepath.Join(dir, "missing.pem"),
		"redlock://alice:" + tlsPassword + "@" + hosts + "?tls_cert=" + cert,
		"redlock://alice:" + tlsPassword + "@" + hosts + "?tls=false&tls_ca=" + ca,
		"redlock://alice:" + tlsPassword + "@" + hosts + ",?tls=true",
		"redlock://alice:" + tlsPassword + "@" + hosts + "?tls=maybe",
	} {
		l, err := distlock.Open(context.Background(), bad)
		if err == nil {
			_ = l.Close()
			t.Fatalf("Open %s: no error", bad)
		}
		wantErr(t, err, distlock.ErrInvalidArgument)
		noSecret(t, "URL error", err.Error())
	}
}

// Each misconfiguration fails TryAcquire promptly with ErrUnavailable
// and a message naming the cause, never the password; refused
// credentials also match distlock.ErrAccessDenied and certain TLS
// mismatches distlock.ErrTLS, which a blocked Acquire returns at once.
// The plaintext server and the silent one bound the handshake by the
// dial timeout.
func (c *tlsCluster) testTLSErrors(t *testing.T) {
	plain := testbed.StartRedis(t, 1, testbed.RedisOptions{})[0]
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	other := testbed.NewCA(t)
	cfg := c.config
	for _, tc := range []struct {
		name  string
		addrs []string // default: the TLS nodes
		opts  redlock.Options
		kind  error // distlock.ErrAccessDenied, distlock.ErrTLS, or nil: neither
		want  []string
	}{
		{name: "WrongPassword", opts: redlock.Options{TLS: cfg(), Username: "alice", Password: "wrong-" + tlsPassword},
			kind: distlock.ErrAccessDenied, want: []string{`authentication as user "alice" failed`, "WRONGPASS"}},
		{name: "UnknownUser", opts: redlock.Options{TLS: cfg(), Username: "bob", Password: tlsPassword},
			kind: distlock.ErrAccessDenied, want: []string{`authentication as user "bob" failed`, "WRONGPASS"}},
		{name: "DefaultUser", opts: redlock.Options{TLS: cfg(), Password: tlsPassword},
			kind: distlock.ErrAccessDenied, want: []string{"authentication as the default user (password only) failed", "WRONGPASS"}},
		{name: "NoAuth", opts: redlock.Options{TLS: cfg()},
			kind: distlock.ErrAccessDenied, want: []string{"requires authentication", "NOAUTH", "Options.Username"}},
		{name: "UntrustedCertificate", opts: redlock.Options{TLS: &tls.Config{RootCAs: other.Pool(), Certificates: cfg().Certificates}, Username: "alice", Password: tlsPassword},
			kind: distlock.ErrTLS, want: []string{"server certificate not accepted", "unknown authority"}},
		{name: "WrongServerName", opts: redlock.Options{TLS: func() *tls.Config { x := cfg(); x.ServerName = "elsewhere"; return x }(), Username: "alice", Password: tlsPassword},
			kind: distlock.ErrTLS, want: []string{"server certificate not accepted", "not elsewhere"}},
		{name: "NoClientCertificate", opts: redlock.Options{TLS: &tls.Config{RootCAs: c.ca.Pool()}, Username: "alice", Password: tlsPassword},
			kind: distlock.ErrTLS, want: []string{"client certificate"}},
		{name: "PlaintextClient", opts: redlock.Options{Username: "alice", Password: tlsPassword},
			want: []string{"TLS settings may not match the server", "Options.TLS"}},
		{name: "TLSClientPlaintextServer", addrs: []string{plain.Addr()}, opts: redlock.Options{TLS: cfg(), DialTimeout: 200 * time.Millisecond, NodeTimeout: time.Second},
			want: []string{"TLS settings may not match the server"}},
		{name: "TLSClientSilentServer", addrs: []string{silent.Addr().String()}, opts: redlock.Options{TLS: cfg(), DialTimeout: 200 * time.Millisecond, NodeTimeout: time.Second},
			want: []string{"TLS handshake: no answer within the dial timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs := tc.addrs
			if addrs == nil {
				addrs = c.addrs("")
			}
			if tc.opts.NodeTimeout == 0 {
				// Under the race detector a new connection's handshake and
				// set-up can take longer than the default 50 ms; the error
				// would then be a timeout, not the cause under test.
				tc.opts.NodeTimeout = time.Second
			}
			l, err := redlock.New(addrs, &tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			start := time.Now()
			_, err = l.TryAcquire(context.Background(), uniqueKey(t))
			d := time.Since(start)
			wantErr(t, err, distlock.ErrUnavailable)
			notErr(t, err, distlock.ErrNotAcquired)
			for _, k := range []error{distlock.ErrAccessDenied, distlock.ErrTLS} {
				if k == tc.kind {
					wantErr(t, err, k)
				} else {
					notErr(t, err, k)
				}
			}
			msg := err.Error()
			t.Logf("%v: %s", d, msg)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not say %q: %s", w, msg)
				}
			}
			noSecret(t, "error", msg+fmt.Sprintf(" %+v %#v", err, err))
			noSecret(t, "fmt", fmt.Sprintf("%v %+v %#v %v %+v %#v", l, l, l, tc.opts, tc.opts, &tc.opts))
			if d > 2*time.Second {
				t.Fatalf("TryAcquire took %v", d)
			}
			if tc.kind == nil {
				return
			}
			// No retry fixes it: a blocked Acquire returns it at once.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = l.Acquire(ctx, uniqueKey(t))
			wantErr(t, err, tc.kind)
			if ctx.Err() != nil || errors.Is(err, distlock.ErrNotAcquired) {
				t.Fatalf("blocked Acquire: %v, want %v before its deadline", err, tc.kind)
			}
		})
	}
}

// NodeTLS gives nodes different settings: a plaintext node beside the
// TLS ones, each verified against its own host name.
func (c *tlsCluster) testTLSPerNode(t *testing.T) {
	plain := testbed.StartRedis(t, 1, testbed.RedisOptions{})[0]
	tlsAddrs := c.addrs("pernode")
	var asked []string
	opts := &redlock.Options{Username: "alice", Password: tlsPassword, NodeTLS: func(addr string) *tls.Config {
		asked = append(asked, addr)
		if addr == plain.Addr() {
			return nil
		}
		return c.config()
	}}
	// The plaintext node has no user alice: give it one with the same
	// password so that the one set of credentials works everywhere.
	if err := plain.Admin().Do(context.Background(), "ACL", "SETUSER", "alice", "on", ">"+tlsPassword, "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	l2, err := redlock.New([]string{tlsAddrs[0], tlsAddrs[1], plain.Addr()}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if len(asked) != 3 {
		t.Fatalf("NodeTLS called for %v, want each of the 3 nodes once", asked)
	}
	key := uniqueKey(t)
	ls := mustAcquire(t, l2, key)
	if v := plain.Admin().Get(context.Background(), key).Val(); v == "" {
		t.Fatal("plaintext node does not hold the key")
	}
	mustRelease(t, ls)
}

// connectionsReceived is the node's INFO stats total_connections_received.
func connectionsReceived(t *testing.T, n *testbed.RedisNode) int {
	t.Helper()
	info, err := n.Admin().Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
			k, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
	}
	t.Fatal("no total_connections_received in INFO stats")
	return 0
}

// A handshake slower than the node timeout (1 ms, from a 10 ms TTL) fails
// the operation but goes on in the background, and its connection serves
// the next operation: that one opens no new connection on those nodes.
func (c *tlsCluster) testTLSHandshakeInBackground(t *testing.T) {
	addrs := c.addrs("background")
	l := c.locker(t, "background", c.options())
	late := map[int]bool{} // nodes whose handshake went on in the background
	for try := 0; len(late) == 0; try++ {
		if try == 20 {
			t.Fatal("no handshake ever ran past the 1 ms node timeout")
		}
		_, err := l.TryAcquire(context.Background(), uniqueKey(t), distlock.WithTTL(10*time.Millisecond))
		var qe *redlock.QuorumError
		if err == nil || !errors.As(err, &qe) {
			continue
		}
		for _, ne := range qe.Nodes {
			if strings.Contains(ne.Err.Error(), "TLS handshake unfinished within the node timeout") {
				late[slices.Index(addrs, ne.Node)] = true
			}
		}
		t.Logf("try %d: %v", try, err)
	}
	time.Sleep(1500 * time.Millisecond) // the handshakes end within the dial timeout (1 s)
	before := make([]int, len(c.nodes))
	for i, n := range c.nodes {
		before[i] = connectionsReceived(t, n)
	}
	ls, err := l.TryAcquire(context.Background(), uniqueKey(t)) // no retries, no subscriptions
	if err != nil {
		t.Fatalf("TryAcquire at the default timeouts: %v", err)
	}
	mustRelease(t, ls)
	for i, n := range c.nodes {
		if d := connectionsReceived(t, n) - before[i]; late[i] && d != 0 {
			t.Errorf("node %d: %d new connections after its handshake finished in the background", i, d)
		}
	}
}

// Options and the Locker print no password under any verb; a URL with a
// TLS parameter turns TLS on for every node, and without one it is off.
func TestTLSOptionsPrintNoSecret(t *testing.T) {
	opts := redlock.Options{Username: "alice", Password: tlsPassword, TLS: &tls.Config{}}
	for _, s := range []string{fmt.Sprintf("%v|%+v|%#v|%s", opts, opts, opts, opts), fmt.Sprintf("%v|%+v|%#v", &opts, &opts, &opts)} {
		noSecret(t, "fmt of Options", s)
		if strings.Count(s, "REDACTED") < 3 || !strings.Contains(s, "alice") {
			t.Fatalf("fmt of Options does not show the redacted password and the user: %s", s)
		}
	}
	if s := fmt.Sprintf("%#v", opts); !strings.HasPrefix(s, "redlock.Options{") {
		t.Fatalf("GoString %s", s)
	}
	for u, tlsOn := range map[string]bool{
		"redlock://alice:" + tlsPassword + "@h1,h2,h3?tls=true":              true,
		"redlock://alice:" + tlsPassword + "@h1,h2,h3?tls_server_name=redis": true,
		"redlock://alice:" + tlsPassword + "@h1,h2,h3":                       false,
	} {
		l, err := distlock.Open(context.Background(), u)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		s := fmt.Sprintf("%v|%+v|%#v", l, l, l)
		_ = l.Close()
		noSecret(t, "fmt of the Locker", s)
		if got := strings.Count(s, " tls"); (got == 9) != tlsOn || !strings.Contains(s, `user "alice"`) || !strings.Contains(s, "password set") {
			t.Fatalf("%s: %s", strings.ReplaceAll(u, tlsPassword, "x"), s)
		}
	}
}
