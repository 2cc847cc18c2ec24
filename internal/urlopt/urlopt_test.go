package urlopt_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/urlopt"
)

func parse(t *testing.T, s string) *urlopt.Params {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return urlopt.New(u)
}

// TestLockOptionsAndUnknown checks that LockOptions and the getters read
// their parameters and that Done names every parameter nobody read.
func TestLockOptionsAndUnknown(t *testing.T) {
	p := parse(t, "x://h?ttl=5s&autoextend=2m&retry_min=1ms&retry_max=9ms&n=3")
	o := p.LockOptions()
	if n := p.Int("n", 0); n != 3 {
		t.Fatalf("n=%d", n)
	}
	if err := p.Done(); err != nil {
		t.Fatal(err)
	}
	if o.TTL != 5*time.Second || !o.AutoExtend || o.MaxHold != 2*time.Minute || o.RetryMin != time.Millisecond || o.RetryMax != 9*time.Millisecond {
		t.Fatalf("%+v", o)
	}
	p = parse(t, "x://h?ttl=5s&colour=red&size=2")
	p.LockOptions()
	err := p.Done()
	if !errors.Is(err, distlock.ErrInvalidArgument) || !strings.Contains(err.Error(), "colour, size") {
		t.Fatalf("unknown params: %v", err)
	}
}

// TestBadValues checks that unparsable, out-of-range, repeated and
// malformed parameters make Done fail with ErrInvalidArgument, and that
// autoextend=true takes the default max hold.
func TestBadValues(t *testing.T) {
	for _, q := range []string{"ttl=abc", "ttl=0s", "autoextend=maybe", "ttl=1s&ttl=2s", "retry_min=5ms&retry_max=1ms",
		"ttl=1s;x=1", "ttl=%zz"} { // malformed queries are refused, not dropped
		p := parse(t, "x://h?"+q)
		p.LockOptions()
		if err := p.Done(); !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Errorf("%s: %v", q, err)
		}
	}
	p := parse(t, "x://h?autoextend=true")
	if o := p.LockOptions(); !o.AutoExtend || o.MaxHold != distlock.DefaultMaxHold || p.Done() != nil {
		t.Fatalf("autoextend=true: %+v %v", o, p.Done())
	}
}

// TestSplit: the named parameters go to ours, every other one to rest, and
// a malformed query stays with ours so that New reports it.
func TestSplit(t *testing.T) {
	u, _ := url.Parse("redis://h:1/0?ttl=5s&dial_timeout=1s&prefix=p&ttl=6s")
	ours, rest := urlopt.Split(u, []string{"ttl", "prefix"})
	if got := ours.Query(); got.Get("prefix") != "p" || len(got["ttl"]) != 2 || got.Has("dial_timeout") {
		t.Errorf("ours = %q", ours.RawQuery)
	}
	if got := rest.Query(); got.Get("dial_timeout") != "1s" || got.Has("ttl") || rest.Host != "h:1" || rest.Path != "/0" {
		t.Errorf("rest = %q", rest.String())
	}
	bad, _ := url.Parse("redis://h:1/0?ttl=%zz")
	ours, rest = urlopt.Split(bad, []string{"ttl"})
	if err := urlopt.New(ours).Done(); !errors.Is(err, distlock.ErrInvalidArgument) || rest.RawQuery != "" {
		t.Errorf("malformed query: New(ours).Done() = %v, rest %q", err, rest.RawQuery)
	}
}
