package redissingle

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/testbed"
)

// secret is the password of every URL below: no error may contain it.
const secret = "s3cr3t-Pw"

// parse parses raw with parseURL, closing the client when the test ends.
func parse(t *testing.T, raw string) (redis.UniversalClient, *Options, error) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("url.Parse: %v", err)
	}
	c, o, err := parseURL(u)
	if c != nil {
		t.Cleanup(func() { _ = c.Close() })
	}
	return c, o, err
}

// tlsFiles writes a CA and a client key pair into a temporary directory
// and returns their paths.
func tlsFiles(t *testing.T) (ca, cert, key string) {
	t.Helper()
	authority := testbed.NewCA(t)
	pair := authority.Client(t, "app")
	dir := t.TempDir()
	ca, cert, key = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	for p, s := range map[string]string{ca: authority.PEM, cert: pair.CertPEM, key: pair.KeyPEM} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return ca, cert, key
}

// TestURLStandalone checks the credentials, database, TLS and Locker
// options a redis:// or rediss:// URL sets, and that go-redis's own
// parameters still reach the client.
func TestURLStandalone(t *testing.T) {
	ca, cert, key := tlsFiles(t)
	c, o, err := parse(t, "rediss://app:"+secret+"@db.example:6390/3?ttl=7s&prefix=p:&dial_timeout=2s&tls_ca="+ca+
		"&tls_cert="+cert+"&tls_key="+key+"&tls_server_name=redis.internal")
	if err != nil {
		t.Fatal(err)
	}
	ro := c.(*redis.Client).Options()
	if ro.Addr != "db.example:6390" || ro.DB != 3 || ro.Username != "app" || ro.Password != secret || ro.DialTimeout.Seconds() != 2 {
		t.Fatalf("options %s db %d user %q dial %v", ro.Addr, ro.DB, ro.Username, ro.DialTimeout)
	}
	if ro.TLSConfig == nil || ro.TLSConfig.ServerName != "redis.internal" || ro.TLSConfig.RootCAs == nil || len(ro.TLSConfig.Certificates) != 1 ||
		ro.TLSConfig.InsecureSkipVerify {
		t.Fatalf("TLS config %+v", ro.TLSConfig)
	}
	if o.Lock.TTL.Seconds() != 7 || o.Prefix != "p:" {
		t.Fatalf("Locker options %+v", o)
	}

	for raw, want := range map[string][2]string{
		"redis://h":                       {"", ""},
		"redis://:" + secret + "@h":       {"", secret},
		"redis://" + secret + "@h":        {"", secret}, // as redis-cli: a password alone
		"redis://app:" + secret + "@h/0":  {"app", secret},
		"redis://app:p%40ss%3Aw@h/0?db=0": {"app", "p@ss:w"},
	} {
		if strings.HasSuffix(raw, "?db=0") {
			continue // refused below: the database given twice
		}
		c, _, err := parse(t, raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		ro := c.(*redis.Client).Options()
		if ro.Username != want[0] || ro.Password != want[1] || ro.TLSConfig != nil {
			t.Fatalf("%s: user %q password %q TLS %v, want %q %q plaintext", raw, ro.Username, ro.Password, ro.TLSConfig != nil, want[0], want[1])
		}
	}

	// TLS on without a file: rediss alone, or tls=true on redis.
	for _, raw := range []string{"rediss://h", "redis://h?tls=true", "redis://h?tls_insecure_skip_verify=true"} {
		c, _, err := parse(t, raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		cfg := c.(*redis.Client).Options().TLSConfig
		if cfg == nil || cfg.ServerName != "" || cfg.InsecureSkipVerify != strings.Contains(raw, "skip") {
			t.Fatalf("%s: TLS config %+v, want one verifying the host dialled", raw, cfg)
		}
	}
}

// TestURLSentinel checks the Sentinels, master name, database and both
// sets of credentials of a redis+sentinel URL.
func TestURLSentinel(t *testing.T) {
	c, o, err := parse(t, "rediss+sentinel://app:"+secret+"@s1,s2:26380,s3:26381/mymaster/2?sentinel_username=sen&sentinel_password="+
		secret+"x&tls_insecure_skip_verify=true&dial_timeout=3s&ttl=9s")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("redis+sentinel://s1,s2:26380,s3:26381/mymaster/2?dial_timeout=3s")
	fo, err := failoverOptions(u, u, conn{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fo.SentinelAddrs, []string{"s1:26379", "s2:26380", "s3:26381"}) || fo.MasterName != "mymaster" || fo.DB != 2 ||
		fo.DialTimeout.Seconds() != 3 {
		t.Fatalf("failover options: sentinels %v master %q db %d dial %v", fo.SentinelAddrs, fo.MasterName, fo.DB, fo.DialTimeout)
	}
	// Through parseURL: the credentials and TLS of the URL.
	if o.Lock.TTL.Seconds() != 9 {
		t.Fatalf("ttl %v", o.Lock.TTL)
	}
	ro := c.(*redis.Client).Options() // the master's client
	if ro.Username != "app" || ro.Password != secret || ro.TLSConfig == nil || !ro.TLSConfig.InsecureSkipVerify || ro.DB != 2 {
		t.Fatalf("master client: user %q TLS %+v db %d", ro.Username, ro.TLSConfig, ro.DB)
	}
	// One IPv6 Sentinel (a list of them does not parse as a URL host).
	u, _ = url.Parse("redis+sentinel://[::1]/m")
	if fo, err := failoverOptions(u, u, conn{}); err != nil || !slices.Equal(fo.SentinelAddrs, []string{"[::1]:26379"}) {
		t.Fatalf("IPv6 Sentinel: %v", err)
	}
	c, _, err = parse(t, "redis+sentinel://s1/m")
	if err != nil {
		t.Fatal(err)
	}
	if ro := c.(*redis.Client).Options(); ro.TLSConfig != nil || ro.Username != "" || ro.Password != "" || ro.DB != 0 {
		t.Fatalf("plain sentinel URL: TLS %v user %q db %d", ro.TLSConfig != nil, ro.Username, ro.DB)
	}
}

// TestURLCluster checks the seed nodes, credentials and TLS of a
// redis+cluster URL.
func TestURLCluster(t *testing.T) {
	c, _, err := parse(t, "rediss+cluster://app:"+secret+"@h1:7000,h2,h3:7002?max_redirects=5&tls_server_name=c.internal")
	if err != nil {
		t.Fatal(err)
	}
	co := c.(*redis.ClusterClient).Options()
	if !slices.Equal(co.Addrs, []string{"h1:7000", "h2:6379", "h3:7002"}) || co.MaxRedirects != 5 || co.Username != "app" || co.Password != secret ||
		co.TLSConfig == nil || co.TLSConfig.ServerName != "c.internal" || co.ReadOnly {
		t.Fatalf("cluster options: %v redirects %d user %q TLS %v read-only %v", co.Addrs, co.MaxRedirects, co.Username, co.TLSConfig != nil, co.ReadOnly)
	}
	c, _, err = parse(t, "redis+cluster://h1/")
	if err != nil {
		t.Fatal(err)
	}
	if co := c.(*redis.ClusterClient).Options(); co.TLSConfig != nil || !slices.Equal(co.Addrs, []string{"h1:6379"}) {
		t.Fatalf("plain cluster URL: %v TLS %v", co.Addrs, co.TLSConfig != nil)
	}
}

// TestURLRejects checks that bad forms fail with one line matching
// ErrInvalidArgument that names the problem and never the password.
func TestURLRejects(t *testing.T) {
	ca, cert, _ := tlsFiles(t)
	cred := "app:" + secret + "@"
	for raw, want := range map[string]string{
		"redis://" + cred + "h1,h2":                                                 "several hosts",
		"redis://" + cred + "h/1?db=2":                                              "database given twice",
		"redis://" + cred + "h?password=x":                                          "userinfo",
		"rediss://" + cred + "h?skip_verify=true":                                   "tls_insecure_skip_verify",
		"rediss://" + cred + "h?tls=false":                                          "tls=false",
		"redis://" + cred + "h?tls_cert=" + cert:                                    "tls_cert and tls_key",
		"redis://" + cred + "h?tls_ca=/nonexistent/ca.pem":                          "tls_ca",
		"redis://" + cred + "h?tls_ca=" + cert + "x":                                "tls_ca",
		"redis://" + cred + "h?tls_ca=" + ca + "&tls_ca=" + ca:                      "given 2 times",
		"redis+sentinel://" + cred + "s1,s2":                                        "master name",
		"redis+sentinel://" + cred + "s1/m/x":                                       "not a number",
		"redis+sentinel://" + cred + "s1/m/-1":                                      "not a number",
		"redis+sentinel://" + cred + "s1/m/1/2":                                     "master name",
		"redis+sentinel://" + cred + "s1/m?master_name=n":                           "path",
		"redis+sentinel://" + cred + "s1/m?addr=s3:1":                               "list the Sentinels",
		"redis+sentinel://" + cred + "s1/m?db=1":                                    "after the master name",
		"redis+sentinel://" + cred + "s1/m?password=" + secret:                      "userinfo",
		"redis+sentinel://" + cred + "s1/m?route_randomly=true":                     "master",
		"redis+sentinel://" + cred + "s1/m?replica_only=true":                       "master",
		"redis+sentinel://" + cred + "s1,,s2/m":                                     "empty host",
		"redis+sentinel://" + cred + "s1/m?sentinel_password=a&sentinel_password=b": "given 2 times",
		"redis+sentinel:///m":                                                       "no host",
		"redis+cluster://" + cred + "h1,h2/1":                                       "only database 0",
		"redis+cluster://" + cred + "h1?addr=h2:1":                                  "list the nodes",
		"redis+cluster://" + cred + "h1?read_only=true":                             "primaries",
		"redis+cluster://" + cred + "h1?sentinel_password=x":                        "sentinel_password",
		"redis+cluster://" + cred + "h1?pool_size=many":                             "pool_size",
		"rediss+cluster://" + cred + "h1?skip_verify=1":                             "tls_insecure_skip_verify",
		"redis+cluster://" + cred + "h1,h2:99999":                                   "bad port",
		"redis://" + cred + "h?sentinel_password=" + secret:                         "sentinel_password",
	} {
		_, _, err := parse(t, raw)
		if !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", raw, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, want) || strings.Contains(msg, secret) || strings.Contains(msg, "\n") {
			t.Errorf("%s: error %q: want one line naming %q, without the password", raw, msg, want)
		}
	}
}

// TestURLSecretsNotPrinted checks that a Locker opened by a URL with
// passwords prints neither password with %v, %+v or %#v, nor do its
// Options.
func TestURLSecretsNotPrinted(t *testing.T) {
	for _, raw := range []string{
		"rediss://app:" + secret + "@h:1/2?prefix=p:",
		"redis+sentinel://app:" + secret + "@s1/m?sentinel_password=" + secret,
		"rediss+cluster://app:" + secret + "@h1,h2",
	} {
		c, o, err := parse(t, raw)
		if err != nil {
			t.Fatal(err)
		}
		l, err := New(c, o)
		if err != nil {
			t.Fatal(err)
		}
		s := l.String()
		if got := fmt.Sprintf("%v %+v %#v %v %+v %#v", l, l, l, o, o, *o); strings.Contains(got, secret) || !strings.Contains(s, `user "app"`) || !strings.Contains(s, "redissingle.Locker{") {
			t.Fatalf("%s: printed %q", raw, got)
		}
		_ = l.Close()
	}
}
