package zklock

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
)

// TestAuthURL: the userinfo of a zk:// URL gives the digest credentials
// and the default ACL (the user's digest with every permission, read to
// the world); the TLS parameters give Options.TLS; the Locker and its
// options print no password, and neither does the error of a URL that
// carries one.
func TestAuthURL(t *testing.T) {
	const secret = "s3cr3t-pw"
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("zk://alice:" + secret + "@h1,h2:2181/app?tls=true&tls_server_name=zk.example")
	l, err := open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o := l.(*Locker).opts
	if o.Username != "alice" || o.Password != secret || o.TLS == nil || o.TLS.ServerName != "zk.example" {
		t.Fatalf("options: user %q, TLS %v", o.Username, o.TLS)
	}
	want := DefaultACL("alice", secret)
	if fmt.Sprint(o.ACL) != fmt.Sprint(want) || len(want) != 2 || want[0].Scheme != "digest" || want[0].Perms != zk.PermAll ||
		want[1].Scheme != "world" || want[1].Perms != zk.PermRead {
		t.Fatalf("ACL %v", o.ACL)
	}
	digest := strings.SplitN(want[0].ID, ":", 2)[1]
	for _, s := range []string{fmt.Sprintf("%v %+v %#v", l, o, o), fmt.Sprintf("%v %+v %#v", &o, &o, &o), o.String()} {
		if strings.Contains(s, secret) || strings.Contains(s, digest) {
			t.Errorf("printed options carry the password or its digest: %s", s)
		}
		if !strings.Contains(s, "alice") {
			t.Errorf("printed options lack the user: %s", s)
		}
	}
	for _, bad := range []string{
		"zk://alice:" + secret + "@h?tls_ca=" + ca,
		"zk://alice:" + secret + "@h?colour=red",
		"zk://alice:" + secret + "@h,,g",
		"zk://al%3Aice:" + secret + "@h",
		"zk://:" + secret + "@h",
	} {
		u, _ := url.Parse(bad)
		_, err := open(context.Background(), u)
		if !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", u.Redacted(), err)
		} else if strings.Contains(err.Error(), secret) {
			t.Errorf("error carries the password: %v", err)
		}
	}
	if _, err := New([]string{"h"}, &Options{Password: secret}); !errors.Is(err, distlock.ErrInvalidArgument) || strings.Contains(err.Error(), secret) {
		t.Errorf("password without user: %v", err)
	}
	acl := zk.WorldACL(zk.PermAll)
	z, err := New([]string{"h"}, &Options{Username: "bob", Password: secret, ACL: acl})
	if err != nil || fmt.Sprint(z.opts.ACL) != fmt.Sprint(acl) {
		t.Errorf("explicit ACL: %v %v", z.opts.ACL, err)
	}
	z, err = New([]string{"h"}, nil)
	if err != nil || fmt.Sprint(z.opts.ACL) != fmt.Sprint(zk.WorldACL(zk.PermAll)) {
		t.Errorf("ACL without credentials: %v %v", z.opts.ACL, err)
	}
}
