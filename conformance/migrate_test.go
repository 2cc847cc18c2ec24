package conformance_test

import (
	"testing"

	"github.com/distlock/distlock/conformance"
	"github.com/distlock/distlock/testbed"
)

// TestMigrate runs the migration scenarios (conformance.RunMigration) on
// three pairs of topologies, one pair at a time: single Redis to a
// 3-member etcd cluster, Redlock over 5 Redis masters to a 3-server
// ZooKeeper ensemble, and single Redis to Postgres.
func TestMigrate(t *testing.T) {
	testbed.RequireDocker(t)
	r1 := conformance.Backend{Name: "R1", New: redisSingleHarness}
	conformance.RunMigration(t,
		conformance.MigrationPair{From: r1, To: conformance.Backend{Name: "E3", New: etcdHarness}},
		conformance.MigrationPair{
			From: conformance.Backend{Name: "R5", New: func(t *testing.T) conformance.Harness {
				return redlockHarness(t, "R5", testbed.RedisOptions{})
			}},
			To: conformance.Backend{Name: "Z3", New: func(t *testing.T) conformance.Harness {
				h, _ := zkHarness(t)
				return h
			}},
		},
		conformance.MigrationPair{From: r1, To: conformance.Backend{Name: "PG", New: pgHarness}},
	)
}
