package urlopt_test

import (
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/testbed"
)

// TestTLS checks when TLS turns on, that the files it names are loaded,
// and that every mistake is one ErrInvalidArgument naming the parameter
// without a key's content.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testbed.NewCA(t)
	client := ca.Client(t, "locker")
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caFile, certFile, keyFile := write("ca.pem", ca.PEM), write("c.pem", client.CertPEM), write("k.pem", client.KeyPEM)
	junk := write("junk.pem", "not a certificate")

	off := parse(t, "x://h")
	if cfg := off.TLS(false); cfg != nil || off.Done() != nil {
		t.Fatalf("plain URL: %v %v", cfg, off.Done())
	}
	on := parse(t, "x://h")
	if cfg := on.TLS(true); cfg == nil || cfg.MinVersion != tls.VersionTLS12 || cfg.RootCAs != nil || on.Done() != nil {
		t.Fatalf("TLS scheme: %+v %v", cfg, on.Done())
	}
	full := parse(t, "x://h?tls_ca="+caFile+"&tls_cert="+certFile+"&tls_key="+keyFile+"&tls_server_name=redis-0")
	cfg := full.TLS(false)
	if err := full.Done(); err != nil || cfg == nil {
		t.Fatalf("full: %v", err)
	}
	if cfg.ServerName != "redis-0" || len(cfg.Certificates) != 1 || cfg.RootCAs == nil || cfg.InsecureSkipVerify {
		t.Fatalf("full: %+v", cfg)
	}
	skip := parse(t, "x://h?tls_insecure_skip_verify=true")
	if cfg := skip.TLS(false); cfg == nil || !cfg.InsecureSkipVerify {
		t.Fatalf("skip: %+v", cfg)
	}

	for _, q := range []struct{ query, want string }{
		{"tls=false&tls_ca=" + caFile, "tls=false"},
		{"tls_ca=" + filepath.Join(dir, "missing.pem"), "tls_ca"},
		{"tls_ca=" + junk, "no PEM certificate"},
		{"tls_cert=" + certFile, "go together"},
		{"tls_cert=" + certFile + "&tls_key=" + junk, "tls_key"},
		{"tls=maybe", "tls"},
	} {
		p := parse(t, "x://h?"+q.query)
		if cfg := p.TLS(false); cfg != nil {
			t.Errorf("%s: config despite the error", q.query)
		}
		err := p.Done()
		if !errors.Is(err, distlock.ErrInvalidArgument) || !strings.Contains(err.Error(), q.want) {
			t.Errorf("%s: %v, want ErrInvalidArgument naming %q", q.query, err, q.want)
		}
		if err != nil && (strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), "\n")) {
			t.Errorf("%s: error quotes a key or spans lines: %q", q.query, err)
		}
	}
}
