package distlock_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// TestOpenUnknownScheme checks that Open of a scheme nobody registered
// returns a one-line error matching ErrInvalidArgument that names the
// registered schemes and the package registering every backend, and that
// the root package knows no backend: a built-in scheme whose package is
// not imported gets the same generic hint.
func TestOpenUnknownScheme(t *testing.T) {
	open := func(context.Context, *url.URL) (distlock.Locker, error) { return nil, nil }
	distlock.Register("hinttest", open)
	for _, raw := range []string{"nosuch://host", "etcd://h:2379"} {
		_, err := distlock.Open(context.Background(), raw)
		if !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Fatalf("%s: %v", raw, err)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, "hinttest") || !strings.Contains(msg, `"github.com/distlock/distlock/all"`) {
			t.Errorf("%s: want one line naming the registered schemes and the all package, got %q", raw, msg)
		}
		if strings.Contains(msg, "etcdlock") {
			t.Errorf("%s: the root package names a backend package: %q", raw, msg)
		}
	}
}

// TestOpenMalformedURL checks that a URL without a scheme or that does not
// parse returns an error matching ErrInvalidArgument.
func TestOpenMalformedURL(t *testing.T) {
	if _, err := distlock.Open(context.Background(), "no-scheme"); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("no scheme: %v", err)
	}
	if _, err := distlock.Open(context.Background(), "%zz://"); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("malformed: %v", err)
	}
}

func TestRegisterPanicsOnDuplicate(t *testing.T) {
	open := func(context.Context, *url.URL) (distlock.Locker, error) { return nil, nil }
	distlock.Register("duptest", open)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic on duplicate scheme")
		}
	}()
	distlock.Register("DUPTEST", open)
}

func TestOptionsValidate(t *testing.T) {
	base := distlock.DefaultOptions()
	if base.TTL != distlock.DefaultTTL || base.AutoExtend {
		t.Fatalf("defaults: %+v", base)
	}
	for name, opt := range map[string]distlock.Option{
		"ttl0":        distlock.WithTTL(0),
		"ttlneg":      distlock.WithTTL(-1),
		"ttlbelowmin": distlock.WithTTL(distlock.MinTTL - 1),
		"maxholdneg":  distlock.WithAutoExtend(-1),
		"retryinvert": distlock.WithRetryDelay(2, 1),
		"retryzero":   distlock.WithRetryDelay(0, 1),
	} {
		if _, err := base.Resolve(opt); !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Errorf("%s: %v", name, err)
		}
	}
	o, err := base.Resolve(distlock.WithAutoExtend(0))
	if err != nil || !o.AutoExtend || o.MaxHold != distlock.DefaultMaxHold {
		t.Fatalf("autoextend default cap: %+v %v", o, err)
	}
	if err := distlock.CheckKey(""); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("empty key: %v", err)
	}
}

func TestWithDefaultsFillsOnlyZeroFields(t *testing.T) {
	o := distlock.Options{TTL: 5 * time.Second}.WithDefaults()
	if o.TTL != 5*time.Second || o.MaxHold != distlock.DefaultMaxHold || o.RetryMin != distlock.DefaultRetryMin || o.RetryMax != distlock.DefaultRetryMax {
		t.Fatalf("%+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	// One retry bound given: the other is filled so that min <= max.
	for _, o := range []distlock.Options{{RetryMin: 80 * time.Millisecond}, {RetryMax: time.Millisecond}} {
		if err := o.WithDefaults().Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

func TestResolveForChecksTheKey(t *testing.T) {
	base := distlock.DefaultOptions()
	if _, err := base.ResolveFor("", distlock.WithTTL(1)); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("empty key: %v", err)
	}
	if _, err := base.ResolveFor("k", distlock.WithTTL(0)); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("ttl 0: %v", err)
	}
	if o, err := base.ResolveFor("k", distlock.WithTTL(7*time.Second)); err != nil || o.TTL != 7*time.Second {
		t.Fatalf("%+v %v", o, err)
	}
}
