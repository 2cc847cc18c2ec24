package memlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// TestOpenByURL checks that the URL's parameters become the per-call
// defaults and that two Lockers opened on the same named space contend.
func TestOpenByURL(t *testing.T) {
	ctx := context.Background()
	a, err := distlock.Open(ctx, "mem://urltest?ttl=2s&autoextend=1m")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := distlock.Open(ctx, "mem://urltest")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	la := hold(t, a, "k")
	if left := time.Until(la.ValidUntil()); left > 2*time.Second || left < time.Second {
		t.Fatalf("ttl from URL not applied: %v", left)
	}
	if _, err := b.TryAcquire(ctx, "k"); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("same named space does not contend: %v", err)
	}
	_ = la.Release(ctx)
}

// TestOpenRejectsBadURL checks that unknown parameters, bad values and a
// path return errors matching ErrInvalidArgument.
func TestOpenRejectsBadURL(t *testing.T) {
	for _, raw := range []string{"mem://x?tll=2s", "mem://x?ttl=-1s", "mem://x/path"} {
		if _, err := distlock.Open(context.Background(), raw); !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Errorf("%s: %v", raw, err)
		}
	}
}
