package testbed

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"testing"
)

// RedisUser is an ACL user of a Redis server started with
// RedisOptions.Users: it may run every command on every key and channel.
type RedisUser struct {
	// Name is the user name; "default" sets the password of Redis's
	// default user (the one AUTH <password> authenticates as) instead of
	// disabling it. It may not contain spaces.
	Name string
	// Password is required. The server keeps only its SHA-256.
	Password string
}

// redisTLSDir holds the server's certificate, key and CA in the
// container.
const redisTLSDir = "/etc/distlock-tls"

// Paths of the TLS files in the container.
const (
	redisTLSCert = redisTLSDir + "/server.crt"
	redisTLSKey  = redisTLSDir + "/server.key"
	redisTLSCA   = redisTLSDir + "/ca.crt"
)

// redisClientServerName is the name the testbed's own clients verify a
// server certificate against: every certificate of CA.Server carries it.
const redisClientServerName = "localhost"

// portArgs are the listening arguments: --port 6379, or with TLS
// --port 0 --tls-port 6379 and the certificate settings, so that the
// container port (and every link and packet fault on it) stays the same.
// Replication runs over TLS too (the replica presents the server
// certificate as its client certificate).
func (o RedisOptions) portArgs(t testing.TB) []string {
	t.Helper()
	if o.TLS == nil {
		if o.CA != "" || o.TLSAuthClients {
			t.Fatalf("testbed: RedisOptions.CA and TLSAuthClients need TLS")
		}
		return []string{"--port", "6379"}
	}
	if o.TLS.CertPEM == "" || o.TLS.KeyPEM == "" || o.CA == "" {
		t.Fatalf("testbed: RedisOptions.TLS needs a certificate, its key and the CA (see NewCA)")
	}
	auth := "no"
	if o.TLSAuthClients {
		auth = "yes"
	}
	return []string{"--port", "0", "--tls-port", "6379",
		"--tls-cert-file", redisTLSCert, "--tls-key-file", redisTLSKey, "--tls-ca-cert-file", redisTLSCA,
		"--tls-auth-clients", auth, "--tls-replication", "yes"}
}

// tlsFiles are the certificate files copied into the container.
func (o RedisOptions) tlsFiles() []fileSpec {
	if o.TLS == nil {
		return nil
	}
	return []fileSpec{
		{path: redisTLSCert, content: o.TLS.CertPEM, mode: 0o644},
		// Readable by all: the official image's entrypoint drops to the
		// redis user. The key exists only for this test.
		{path: redisTLSKey, content: o.TLS.KeyPEM, mode: 0o644},
		{path: redisTLSCA, content: o.CA, mode: 0o644},
	}
}

// authConf is the ACL part of the config file: one user line per user
// (password as its SHA-256, so no quoting is needed), the default user
// disabled unless it is one of them, and the first user's credentials for
// a replica's link to its primary. In the config file rather than on the
// command line, so that a CONFIG REWRITE rewrites these lines instead of
// duplicating them.
func (o RedisOptions) authConf(t testing.TB) string {
	t.Helper()
	if len(o.Users) == 0 {
		return ""
	}
	var b strings.Builder
	hasDefault := false
	for _, u := range o.Users {
		if u.Name == "" || strings.ContainsAny(u.Name, " \t\r\n\"'") || u.Password == "" {
			t.Fatalf("testbed: RedisOptions.Users: user %q needs a name without spaces or quotes and a password", u.Name)
		}
		sum := sha256.Sum256([]byte(u.Password))
		fmt.Fprintf(&b, "user %s reset on #%s ~* &* +@all\n", u.Name, hex.EncodeToString(sum[:]))
		hasDefault = hasDefault || u.Name == "default"
	}
	if !hasDefault {
		b.WriteString("user default reset off\n")
	}
	first := o.Users[0]
	fmt.Fprintf(&b, "masteruser %s\nmasterauth %s\n", first.Name, quoteConf(first.Password))
	return b.String()
}

// quoteConf quotes s for a Redis config file.
func quoteConf(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' || c == '\\' || c < 0x20 || c >= 0x7f {
			fmt.Fprintf(&b, `\x%02x`, c)
		} else {
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// redisAccess is how the testbed's own clients (Admin, the probes,
// Commands) reach a server: TLS when it serves TLS, as the first of
// RedisOptions.Users when it has users.
type redisAccess struct {
	tls            *tls.Config // nil: plaintext
	user, password string      // user "": no AUTH
}

// access returns the testbed's client settings for servers of o. With
// TLSAuthClients, the server's own certificate (which CA.Server issues
// for client use too) is the client certificate.
func (o RedisOptions) access(t testing.TB) redisAccess {
	t.Helper()
	var a redisAccess
	if o.TLS != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(o.CA)) {
			t.Fatalf("testbed: RedisOptions.CA holds no PEM certificate")
		}
		a.tls = &tls.Config{RootCAs: pool, ServerName: redisClientServerName, MinVersion: tls.VersionTLS12}
		if o.TLSAuthClients {
			a.tls.Certificates = []tls.Certificate{o.TLS.TLSCertificate(t)}
		}
	}
	if len(o.Users) > 0 {
		a.user, a.password = o.Users[0].Name, o.Users[0].Password
	}
	return a
}

// secure wraps nc in TLS and completes the handshake by ctx, if the
// server serves TLS; on error nc is closed.
func (a redisAccess) secure(ctx context.Context, nc net.Conn) (net.Conn, error) {
	if a.tls == nil {
		return nc, nil
	}
	tc := tls.Client(nc, a.tls)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, nil
}

// dialAdmin is the Admin client's dialer: the current port, with TLS if
// needed. go-redis authenticates itself (HELLO ... AUTH).
func (r *RedisNode) dialAdmin(ctx context.Context) (net.Conn, error) {
	nc, err := r.dialDirect(ctx)
	if err != nil {
		return nil, err
	}
	return r.access.secure(ctx, nc)
}

// dialOwn dials the server with raw for one of the testbed's own commands:
// TLS if needed, then AUTH if the server has users (counted as the
// testbed's own command).
func (r *RedisNode) dialOwn(ctx context.Context, raw func(context.Context) (net.Conn, error)) (net.Conn, error) {
	nc, err := raw(ctx)
	if err != nil {
		return nil, err
	}
	if nc, err = r.access.secure(ctx, nc); err != nil {
		return nil, err
	}
	if r.access.user == "" {
		return nc, nil
	}
	if _, err := newRespConn(nc).do(ctx, "AUTH", r.access.user, r.access.password); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("AUTH as %s: %w", r.access.user, err)
	}
	r.own.Add(1)
	return nc, nil
}
