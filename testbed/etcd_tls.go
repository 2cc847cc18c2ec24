package testbed

import (
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EtcdTLS serves an etcd cluster's clients over TLS (https client URLs).
// Peer traffic between members stays plaintext on their private network:
// the tests exercise the client side only.
type EtcdTLS struct {
	// CA signs the members' server certificate, which names
	// ServerHosts and the members' aliases. Required.
	CA *CA
	// ClientCertAuth (--client-cert-auth, with CA as --trusted-ca-file)
	// makes the members refuse clients without a certificate CA signed. The testbed's own clients
	// then present one with the common name "root".
	ClientCertAuth bool
}

// EtcdAuth enables etcd's authentication after the cluster starts: the
// testbed adds the root user and Users, then runs `auth enable` through
// its admin client, which from then on authenticates as root.
type EtcdAuth struct {
	// RootPassword is the password of the root user; default
	// EtcdRootPassword.
	RootPassword string
	// Users are the other users to create.
	Users []EtcdUser
}

// EtcdRootPassword is the root user's password when EtcdAuth.RootPassword
// is empty.
const EtcdRootPassword = "distlock-root-pw"

// EtcdUser is a user of a cluster with authentication: it gets a role of
// its own ("<Name>-role") granting readwrite on every key starting with
// Prefix, or no permission at all if Prefix is empty.
type EtcdUser struct {
	Name, Password, Prefix string
}

// etcdCertDir holds the members' certificate files.
const etcdCertDir = "/etc/distlock-etcd-tls"

// etcdAdminDialTimeout bounds the authentication of a testbed client.
const etcdAdminDialTimeout = 10 * time.Second

// clientScheme is the scheme of the members' client URLs.
func (o EtcdOptions) clientScheme() string {
	if o.TLS != nil {
		return "https"
	}
	return "http"
}

// tlsArgs are the members' TLS flags (none without TLS).
func (o EtcdOptions) tlsArgs() []string {
	if o.TLS == nil {
		return nil
	}
	args := []string{
		"--cert-file", etcdCertDir + "/server.crt",
		"--key-file", etcdCertDir + "/server.key",
	}
	if o.TLS.ClientCertAuth {
		args = append(args, "--client-cert-auth", "--trusted-ca-file", etcdCertDir+"/ca.crt")
	}
	return args
}

// tlsFiles are the certificate files of an n-member cluster: one server
// certificate for every member, naming all their aliases.
func (o EtcdOptions) tlsFiles(t testing.TB, n int) []fileSpec {
	t.Helper()
	if o.TLS == nil {
		return nil
	}
	if o.TLS.CA == nil {
		t.Fatalf("testbed: StartEtcd: EtcdTLS without a CA")
	}
	var hosts []string
	for i := range n {
		hosts = append(hosts, fmt.Sprintf("etcd-%d", i))
	}
	kp := o.TLS.CA.Server(t, hosts...)
	return []fileSpec{
		{path: etcdCertDir + "/ca.crt", content: o.TLS.CA.PEM, mode: 0o644},
		{path: etcdCertDir + "/server.crt", content: kp.CertPEM, mode: 0o644},
		{path: etcdCertDir + "/server.key", content: kp.KeyPEM, mode: 0o600},
	}
}

// clientTLS is the TLS configuration of the testbed's clients, nil
// without TLS.
func (o EtcdOptions) clientTLS(t testing.TB) *tls.Config {
	t.Helper()
	if o.TLS == nil {
		return nil
	}
	cfg := &tls.Config{RootCAs: o.TLS.CA.Pool(), MinVersion: tls.VersionTLS12}
	if o.TLS.ClientCertAuth {
		cfg.Certificates = []tls.Certificate{o.TLS.CA.Client(t, "root").TLSCertificate(t)}
	}
	return cfg
}

// TLSConfig is the client TLS configuration the testbed's own clients
// use (trusting the cluster's CA, with a client certificate under
// ClientCertAuth), or nil for a plaintext cluster. Callers may change the
// copy they get.
func (c *EtcdCluster) TLSConfig() *tls.Config {
	if c.tls == nil {
		return nil
	}
	return c.tls.Clone()
}

// clientConfig is the configuration of a testbed client of endpoints:
// TLS as the cluster serves it, root's credentials once authentication is
// on.
func (c *EtcdCluster) clientConfig(endpoints []string) clientv3.Config {
	cfg := clientv3.Config{Endpoints: endpoints, Logger: zap.NewNop(), TLS: c.TLSConfig()}
	if c.rootPassword != "" {
		cfg.Username, cfg.Password, cfg.DialTimeout = "root", c.rootPassword, etcdAdminDialTimeout
	}
	return cfg
}

// enableAuth creates the root user and auth.Users through member 0, turns
// authentication on, and replaces every member's admin client by one
// authenticated as root.
func (c *EtcdCluster) enableAuth(ctx context.Context, t testing.TB, auth *EtcdAuth) {
	t.Helper()
	if auth == nil {
		return
	}
	pw := auth.RootPassword
	if pw == "" {
		pw = EtcdRootPassword
	}
	a := c.Nodes[0].admin
	steps := []func() error{
		func() error { _, err := a.UserAdd(ctx, "root", pw); return err },
		func() error { _, err := a.UserGrantRole(ctx, "root", "root"); return err },
	}
	for _, u := range auth.Users {
		role := u.Name + "-role"
		steps = append(steps,
			func() error { _, err := a.RoleAdd(ctx, role); return err },
			func() error { _, err := a.UserAdd(ctx, u.Name, u.Password); return err },
			func() error { _, err := a.UserGrantRole(ctx, u.Name, role); return err })
		if u.Prefix != "" {
			steps = append(steps, func() error {
				_, err := a.RoleGrantPermission(ctx, role, u.Prefix, clientv3.GetPrefixRangeEnd(u.Prefix),
					clientv3.PermissionType(clientv3.PermReadWrite))
				return err
			})
		}
	}
	steps = append(steps, func() error { _, err := a.AuthEnable(ctx); return err })
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("testbed: etcd auth setup, step %d: %v", i, err)
		}
	}
	c.rootPassword = pw
	for _, e := range c.Nodes {
		admin, err := clientv3.New(c.clientConfig([]string{e.Link(etcdAdminLink).Addr()}))
		if err != nil {
			t.Fatalf("testbed: %s: admin client as root: %v", e.name, err)
		}
		_ = e.admin.Close()
		e.admin = admin
		t.Cleanup(func() { _ = admin.Close() })
	}
}
