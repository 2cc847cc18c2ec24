package testbed

import (
	"context"
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestEtcdTLSAuth starts a 3-member cluster serving clients over TLS with
// client certificates required and authentication on: the testbed's own
// clients work (leader, writes as root); a lock user may write under its
// prefix only; a user without permission is refused; a wrong password is
// refused; a client that does not trust the CA, one without a client
// certificate and a plaintext one get nothing done.
func TestEtcdTLSAuth(t *testing.T) {
	RequireDocker(t)
	ca := NewCA(t)
	c := StartEtcd(t, 3, EtcdOptions{
		TLS: &EtcdTLS{CA: ca, ClientCertAuth: true},
		Auth: &EtcdAuth{Users: []EtcdUser{
			{Name: "locker", Password: "locker-pw", Prefix: "locks/"},
			{Name: "nobody", Password: "nobody-pw"},
		}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client(t, "root").Put(ctx, "anywhere", "v"); err != nil {
		t.Fatalf("root put: %v", err)
	}
	user := func(name, pw string, tc *tls.Config) (*clientv3.Client, error) {
		cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints("u"), TLS: tc, Username: name, Password: pw,
			DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
		if err == nil {
			t.Cleanup(func() { _ = cli.Close() })
		}
		return cli, err
	}
	good := c.TLSConfig()
	good.Certificates = []tls.Certificate{ca.Client(t, "locker").TLSCertificate(t)}
	locker, err := user("locker", "locker-pw", good)
	if err != nil {
		t.Fatalf("locker client: %v", err)
	}
	if _, err := locker.Put(ctx, "locks/a", "v"); err != nil {
		t.Fatalf("locker put under its prefix: %v", err)
	}
	if _, err := locker.Put(ctx, "other/a", "v"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Fatalf("locker put outside its prefix: %v, want permission denied", err)
	}
	nobody, err := user("nobody", "nobody-pw", good)
	if err != nil {
		t.Fatalf("nobody client: %v", err)
	}
	if _, err := nobody.Put(ctx, "locks/a", "v"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Fatalf("nobody put: %v, want permission denied", err)
	}
	if _, err := user("locker", "wrong", good); !errors.Is(err, rpctypes.ErrAuthFailed) {
		t.Fatalf("wrong password: %v, want auth failed", err)
	}
	untrusted := good.Clone()
	untrusted.RootCAs = NewCA(t).Pool()
	if _, err := user("locker", "locker-pw", untrusted); err == nil {
		t.Fatal("client not trusting the CA authenticated")
	}
	noCert := c.TLSConfig()
	noCert.Certificates = nil
	if _, err := user("locker", "locker-pw", noCert); err == nil {
		t.Fatal("client without a certificate authenticated")
	}
	if _, err := user("locker", "locker-pw", nil); err == nil {
		t.Fatal("plaintext client authenticated")
	}
}
