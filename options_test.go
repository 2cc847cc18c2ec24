package distlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// TestOptionsValidate checks the defaults, that out-of-range options and
// an empty key are rejected with ErrInvalidArgument, and that
// WithAutoExtend(0) keeps the default max hold.
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

// TestWithDefaultsFillsOnlyZeroFields checks that WithDefaults keeps the
// fields given and fills the others so that the result validates.
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

// TestResolveForChecksTheKey checks that ResolveFor rejects an empty key
// and invalid options, and applies valid ones.
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
