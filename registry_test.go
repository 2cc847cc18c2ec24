package distlock_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

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

// TestRegisterPanicsOnDuplicate checks that registering a scheme twice,
// in any case, panics.
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
