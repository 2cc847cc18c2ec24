package conformance_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/conformance"
	"github.com/distlock/distlock/memlock"
)

// TestMem runs the suite on the in-process backend: no Docker needed.
func TestMem(t *testing.T) {
	space := memlock.New(nil)
	conformance.Run(t, conformance.Harness{
		Name: "mem",
		TTL:  500 * time.Millisecond,
		NewLocker: func(context.Context, string) (distlock.Locker, error) {
			return space.NewHandle(), nil
		},
		Revoke: func(_ context.Context, key string) error {
			space.Revoke(key)
			return nil
		},
	})
}
