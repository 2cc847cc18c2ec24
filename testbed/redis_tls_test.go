package testbed

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// tlsACLOptions is a TLS-only server that requires client certificates
// and has one ACL user, alice.
func tlsACLOptions(t *testing.T, ca *CA) RedisOptions {
	kp := ca.Server(t, "redis-primary", "redis-replica")
	return RedisOptions{
		TLS: &kp, CA: ca.PEM, TLSAuthClients: true,
		Users: []RedisUser{{Name: "alice", Password: "s3cret pass\"word"}},
	}
}

// tlsClient is a go-redis client to addr with cfg (nil: plaintext) as
// user/password (user "": no AUTH).
func tlsClient(t *testing.T, addr string, cfg *tls.Config, user, password string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr: addr, TLSConfig: cfg, Username: user, Password: password,
		MaxRetries: -1, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A TLS+ACL server starts, answers the testbed's own clients (Admin,
// Commands) and a client through its link with the right certificate and
// password, and refuses plaintext, a client without a certificate, no
// AUTH and a wrong password. It does so again after a restart.
func TestRedisTLSACL(t *testing.T) {
	RequireDocker(t)
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	ca := NewCA(t)
	opts := tlsACLOptions(t, ca)
	n := StartRedis(t, 1, opts)[0]
	if err := n.Admin().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("Admin SET: %v", err)
	}
	good := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{ca.Client(t, "app").TLSCertificate(t)}}
	app := tlsClient(t, n.Link("app").Addr(), good, "alice", opts.Users[0].Password)
	if got, err := app.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET through the link over TLS as alice = %q, %v", got, err)
	}

	for _, c := range []struct {
		name, want     string
		cfg            *tls.Config
		user, password string
	}{
		{"plaintext", "", nil, "alice", opts.Users[0].Password},
		{"no client certificate", "", &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}, "alice", opts.Users[0].Password},
		{"no AUTH", "NOAUTH", good, "", ""},
		{"wrong password", "WRONGPASS", good, "alice", "wrong"},
		{"unknown user", "WRONGPASS", good, "bob", opts.Users[0].Password},
		{"default user", "WRONGPASS", good, "", opts.Users[0].Password},
	} {
		err := tlsClient(t, n.Addr(), c.cfg, c.user, c.password).Ping(ctx).Err()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: PING error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// Raw plaintext to the TLS port: no PONG, whatever comes back.
	if reply, err := respDo(ctx, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", n.Addr())
	}, "PING"); err == nil {
		t.Errorf("plaintext PING to the TLS port answered %q", reply)
	}

	c0, err := n.Commands(ctx)
	if err != nil {
		t.Fatalf("Commands: %v", err)
	}
	if again, err := n.Commands(ctx); err != nil || again != c0 {
		t.Fatalf("Commands counts its own AUTH or INFO: %d then %d (%v)", c0, again, err)
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if c, err := n.Commands(ctx); err != nil || c != 0 {
		t.Fatalf("Commands after restart = %d, %v; want 0", c, err)
	}
	// A fresh client: the restart reset the old one's pooled connection.
	if err := tlsClient(t, n.Link("app").Addr(), good, "alice", opts.Users[0].Password).Set(ctx, "k2", "v2", 0).Err(); err != nil {
		t.Fatalf("SET through the link after restart: %v", err)
	}
}

// A user named "default" keeps the default user, with that password, so
// AUTH <password> works (requirepass); a TLS server without
// TLSAuthClients takes a client without a certificate.
func TestRedisTLSDefaultUser(t *testing.T) {
	RequireDocker(t)
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	ca := NewCA(t)
	kp := ca.Server(t)
	n := StartRedis(t, 1, RedisOptions{TLS: &kp, CA: ca.PEM, Users: []RedisUser{{Name: "default", Password: "pw"}}})[0]
	cfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}
	if err := tlsClient(t, n.Addr(), cfg, "", "pw").Ping(ctx).Err(); err != nil {
		t.Fatalf("PING with AUTH pw: %v", err)
	}
	if err := tlsClient(t, n.Addr(), cfg, "", "").Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("PING without AUTH: %v, want NOAUTH", err)
	}
	if err := n.Admin().Ping(ctx).Err(); err != nil {
		t.Fatalf("Admin PING: %v", err)
	}
}

// A primary and replica with TLS and users replicate over TLS, the
// replica logging in as the first user.
func TestRedisTLSACLReplicated(t *testing.T) {
	RequireDocker(t)
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	r := StartRedisReplicated(t, tlsACLOptions(t, NewCA(t))) // waits for the link
	if err := r.Primary.Admin().Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitValue(t, r.Replica.Admin(), "k", "v1")
}
