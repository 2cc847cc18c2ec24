package conformance_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/conformance"
	_ "github.com/distlock/distlock/redissingle"
	"github.com/distlock/distlock/testbed"
)

// TestRedisSingle runs the suite on single Redis ("R1").
func TestRedisSingle(t *testing.T) {
	testbed.RequireDocker(t)
	conformance.Run(t, redisSingleHarness(t))
}

// redisSingleHarness starts a primary with an asynchronous replica, each
// client connected to the primary's address over its own packet link. On
// failover the address moves to the promoted replica, as a virtual IP
// would.
func redisSingleHarness(t *testing.T) conformance.Harness {
	pair := testbed.StartRedisReplicated(t, testbed.RedisOptions{})
	primary, replica := pair.Primary, pair.Replica
	links := newLinkSet(t, primary.Node)
	url := func(client string) string { return "redis://" + links.addrs(client)[0] + "/0" }
	return conformance.Harness{
		Name: "R1",
		Spec: "R1",
		TTL:  time.Second,
		NewLocker: func(ctx context.Context, client string) (distlock.Locker, error) {
			return distlock.Open(ctx, url(client))
		},
		URL:      url,
		Servers:  []conformance.Server{primary, replica},
		Minority: []int{1}, // the replica: the primary keeps serving
		Majority: []int{0}, // the primary
		Links:    func(client string) conformance.Link { return links.links(client) },
		Revoke: func(ctx context.Context, key string) error {
			return primary.Admin().Del(ctx, key).Err()
		},
		// The replica is cut off from the primary before A acquires, so
		// the lock never reaches it: the asynchronous-replication window
		// of S18, held open deterministically.
		PrepareFailover: func(ctx context.Context) error { return pair.CutReplication(ctx) },
		Failover: func(ctx context.Context) error {
			if err := primary.Kill(ctx); err != nil {
				return err
			}
			if err := pair.Promote(ctx); err != nil {
				return err
			}
			return primary.RoutePacketLinksTo(ctx, replica.Node)
		},
		// The old primary comes back empty as a primary and takes its
		// clients back; the promoted replica stays a standalone master.
		RestoreFailover: func(ctx context.Context) error {
			if err := pair.HealReplication(ctx); err != nil {
				return err
			}
			if err := primary.Start(ctx); err != nil {
				return err
			}
			primary.RouteLinksTo(primary.Node)
			return primary.RoutePacketLinksTo(ctx, primary.Node)
		},
		Commands: func(ctx context.Context) (int64, error) { return primary.Commands(ctx) },
	}
}
