package conformance_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/conformance"
	"github.com/distlock/distlock/memlock"
	"github.com/distlock/distlock/testbed"
)

// TestHelpers runs the helper scenarios (conformance.RunHelpers: Do,
// leader, multilock, inspection) on the in-process backend and on every
// container topology, each on servers of its own, two at a time. Redlock
// runs once, on volatile masters: its other deployments differ only
// across restarts, which these scenarios do not make. The container
// topologies are skipped, each on its own, where Docker is unavailable
// (or with -short).
func TestHelpers(t *testing.T) {
	docker := func(newHarness func(t *testing.T) conformance.Harness) func(t *testing.T) conformance.Harness {
		return func(t *testing.T) conformance.Harness {
			testbed.RequireDocker(t)
			return newHarness(t)
		}
	}
	conformance.RunHelpers(t,
		conformance.Backend{Name: "mem", New: memHelpersHarness},
		conformance.Backend{Name: "R1", New: docker(redisSingleHarness)},
		conformance.Backend{Name: "R5", New: docker(func(t *testing.T) conformance.Harness {
			return redlockHarness(t, "R5", testbed.RedisOptions{})
		})},
		conformance.Backend{Name: "PG", New: docker(pgHarness)},
		conformance.Backend{Name: "E3", New: docker(etcdHarness)},
		conformance.Backend{Name: "Z3", New: docker(func(t *testing.T) conformance.Harness {
			h, _ := zkHarness(t)
			return h
		})},
	)
}

// memHelpersHarness is TestMem's harness on a space of its own.
func memHelpersHarness(*testing.T) conformance.Harness {
	space := memlock.New(nil)
	return conformance.Harness{
		Name: "mem",
		TTL:  500 * time.Millisecond,
		NewLocker: func(context.Context, string) (distlock.Locker, error) {
			return space.NewHandle(), nil
		},
		Revoke: func(_ context.Context, key string) error {
			space.Revoke(key)
			return nil
		},
	}
}
