package distlock_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/distlock/distlock"
)

// TestErrAccessDeniedAndTLS checks that both sentinels, and errors
// wrapping them, match ErrUnavailable and neither matches the other.
func TestErrAccessDeniedAndTLS(t *testing.T) {
	sentinels := []error{
		distlock.ErrNotAcquired, distlock.ErrLeaseLost, distlock.ErrReleased, distlock.ErrClosed,
		distlock.ErrInvalidArgument, distlock.ErrUnavailable, distlock.ErrNotSupported,
		distlock.ErrAccessDenied, distlock.ErrTLS,
	}
	for _, c := range []struct {
		err  error
		text string
	}{
		{distlock.ErrAccessDenied, "distlock: access denied"},
		{distlock.ErrTLS, "distlock: TLS failure"},
	} {
		wrapped := fmt.Errorf("%w: backend: what to check", c.err)
		for _, err := range []error{c.err, wrapped} {
			for _, s := range sentinels {
				want := s == c.err || s == distlock.ErrUnavailable
				if got := errors.Is(err, s); got != want {
					t.Errorf("errors.Is(%q, %q) = %v, want %v", err, s, got, want)
				}
			}
		}
		if c.err.Error() != c.text {
			t.Errorf("text %q, want %q", c.err.Error(), c.text)
		}
	}
	if errors.Is(distlock.ErrUnavailable, distlock.ErrAccessDenied) || errors.Is(distlock.ErrUnavailable, distlock.ErrTLS) {
		t.Error("ErrUnavailable matches ErrAccessDenied or ErrTLS")
	}
}
