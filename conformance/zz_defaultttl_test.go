package conformance_test

import (
	"testing"

	"github.com/distlock/distlock/conformance"
	"github.com/distlock/distlock/testbed"
)

// TestDefaultTTL runs the TTL-sensitive scenarios once more at the
// default TTL (distlock.DefaultTTL) on every backend, two at a time, each
// lane of scenarios on servers of its own (conformance.RunDefaultTTL):
// a timeout inside a library or server that does not scale with the TTL
// cannot hide below the suite's short TTLs there. Redlock runs once, on
// volatile masters (its other deployments differ only across restarts,
// which these scenarios do not make). The file's name sorts last: Go runs
// a package's tests in file order, and this test's many servers come after
// the per-backend suites, whose timing-sensitive scenarios ran into trouble
// after them.
func TestDefaultTTL(t *testing.T) {
	testbed.RequireDocker(t)
	conformance.RunDefaultTTL(t,
		conformance.Backend{Name: "PG", New: pgHarness},
		conformance.Backend{Name: "R1", New: redisSingleHarness},
		conformance.Backend{Name: "R5", New: func(t *testing.T) conformance.Harness {
			return redlockHarness(t, "R5", testbed.RedisOptions{})
		}},
		conformance.Backend{Name: "E3", New: etcdHarness},
		conformance.Backend{Name: "Z3", New: func(t *testing.T) conformance.Harness {
			h, _ := zkHarness(t)
			return h
		}},
	)
}
