package zklock

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// TestOpenURL: a zk:// URL gives the Locker its servers (port 2181 when
// missing), its prefix (the path, without a trailing slash) and every
// option of the query; a URL without hosts, with bad credentials, an unknown
// parameter or an invalid value is refused with ErrInvalidArgument.
func TestOpenURL(t *testing.T) {
	for _, tc := range []struct {
		url     string
		servers []string
		prefix  string
		check   func(Options) bool
	}{
		{"zk://h1:2181,h2:2182,h3:2181", []string{"h1:2181", "h2:2182", "h3:2181"}, DefaultPrefix, nil},
		{"zk://h1,h2,h3:2181/app/locks/", []string{"h1:2181", "h2:2181", "h3:2181"}, "/app/locks", nil},
		{"zk://h/p?ttl=5s&session_timeout=4s&safe_fraction=0.5&tick_time=500ms&connect_timeout=2s&max_sessions=3&autoextend=1m",
			[]string{"h:2181"}, "/p", func(o Options) bool {
				return o.Lock.TTL == 5*time.Second && o.SessionTimeout == 4*time.Second && o.SafeFraction == 0.5 &&
					o.TickTime == 500*time.Millisecond && o.ConnectTimeout == 2*time.Second && o.MaxSessions == 3 && o.Lock.AutoExtend && o.Lock.MaxHold == time.Minute
			}},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		l, err := open(context.Background(), u)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		z := l.(*Locker)
		if strings.Join(z.servers, ",") != strings.Join(tc.servers, ",") || z.opts.Prefix != tc.prefix {
			t.Errorf("%s: servers %v prefix %q", tc.url, z.servers, z.opts.Prefix)
		}
		if tc.check != nil && !tc.check(z.opts) {
			t.Errorf("%s: options %+v", tc.url, z.opts)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{"zk://", "zk:opaque", "zk://u%3Ax:p@h", "zk://:p@h", "zk://h?colour=red", "zk://h?safe_fraction=1.5", "zk://h?safe_fraction=0.7", "zk://h?tick_time=-1s",
		"zk://h?ttl=0s", "zk://h,,g", "zk://h/a/../b", "zk://h?session_timeout=-1s"} {
		u, err := url.Parse(bad)
		if err != nil {
			continue
		}
		if _, err := open(context.Background(), u); !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", bad, err)
		}
	}
}

// TestEscape: every key is one valid path component, and distinct keys
// give distinct components.
func TestEscape(t *testing.T) {
	keys := []string{"plain", "with/slashes/a/b", "ünïcödé ✓ 日本", "spaces and: colons?&=#%", ".", "..", "%2E", "a.b", "a%2Fb", "A", "a"}
	seen := map[string]string{}
	for _, k := range keys {
		e := escape(k)
		if strings.ContainsAny(e, "/\x00") || e == "." || e == ".." {
			t.Errorf("escape(%q) = %q is not a valid component", k, e)
		}
		if prev, dup := seen[e]; dup {
			t.Errorf("escape(%q) = escape(%q) = %q", k, prev, e)
		}
		seen[e] = k
	}
	if escape("a/b") != "a%2Fb" || escape("x-y_z.~:@") != "x-y_z.~:@" {
		t.Errorf("escape: %q %q", escape("a/b"), escape("x-y_z.~:@"))
	}
}

// TestSortLockNodes: children are put in queue order by their sequence
// number, whatever comes before it, and a child without one is left out.
func TestSortLockNodes(t *testing.T) {
	got := sortLockNodes([]string{"_c_b-lock-0000000010", "other", "_c_a-lock-0000000002", "x-lock-0000000005"})
	var names []string
	for _, n := range got {
		names = append(names, n.name)
	}
	if strings.Join(names, " ") != "_c_a-lock-0000000002 x-lock-0000000005 _c_b-lock-0000000010" {
		t.Fatalf("sorted %v", names)
	}
}
