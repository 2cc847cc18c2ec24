package conformance_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/conformance"
	_ "github.com/distlock/distlock/redlock"
	"github.com/distlock/distlock/testbed"
)

// redlockHarness is Redlock over five independent masters ("R5"), each
// client reaching each node over its own packet link.
func redlockHarness(t *testing.T, name string, opts testbed.RedisOptions) conformance.Harness {
	nodes := testbed.StartRedis(t, 5, opts)
	servers := make([]conformance.Server, len(nodes))
	bare := make([]*testbed.Node, len(nodes))
	for i, n := range nodes {
		servers[i], bare[i] = n, n.Node
	}
	links := newLinkSet(t, bare...)
	url := func(client string) string { return "redlock://" + strings.Join(links.addrs(client), ",") }
	return conformance.Harness{
		Name: name,
		Spec: "R5",
		TTL:  time.Second,
		NewLocker: func(ctx context.Context, client string) (distlock.Locker, error) {
			return distlock.Open(ctx, url(client))
		},
		URL:         url,
		Servers:     servers,
		Minority:    []int{3, 4},
		Majority:    []int{0, 1, 2},
		Links:       func(client string) conformance.Link { return links.links(client) },
		ServerLinks: links.perServer,
		Revoke: func(ctx context.Context, key string) error { // an operator DELs it on a majority
			for _, n := range nodes[:3] {
				if err := n.Admin().Del(ctx, key).Err(); err != nil {
					return err
				}
			}
			return nil
		},
		Holders: func(ctx context.Context, key string) (int, error) {
			held := 0
			for _, n := range nodes {
				c, err := n.Admin().Exists(ctx, key).Result()
				if err != nil {
					return 0, err
				}
				held += int(c)
			}
			return held, nil
		},
		Commands: func(ctx context.Context) (int64, error) {
			var sum int64
			for _, n := range nodes {
				c, err := n.Commands(ctx)
				if err != nil {
					return 0, err
				}
				sum += c
			}
			return sum, nil
		},
	}
}

// TestRedlock runs the suite on Redlock over five volatile masters.
func TestRedlock(t *testing.T) {
	testbed.RequireDocker(t)
	conformance.Run(t, redlockHarness(t, "R5", testbed.RedisOptions{}))
}

// TestRedlockFsync runs it again on masters that fsync every write
// (appendfsync always): a restarted node remembers the holder, so the
// restart scenarios must hold.
func TestRedlockFsync(t *testing.T) {
	testbed.RequireDocker(t)
	h := redlockHarness(t, "R5-fsync", testbed.RedisOptions{Persistence: "fsync-always"})
	h.Guarantees = func(g distlock.Guarantees) distlock.Guarantees {
		// The deployment's promise, not the client's: every node fsyncs
		// each write, so neither its locks nor its fence counter are lost.
		g.SurvivesRestart = true
		g.Fence = distlock.FenceDurable
		return g
	}
	conformance.Run(t, h)
}

// delayedRestart keeps a killed node down for at least delay before it
// starts again: the Redis spec's second answer to crash recovery ("make
// the node unavailable for at least the max TTL"), so that every lock the
// node granted has expired before it can grant the key again.
type delayedRestart struct {
	*testbed.RedisNode
	delay time.Duration

	mu     sync.Mutex
	downAt time.Time
}

func (d *delayedRestart) Kill(ctx context.Context) error {
	d.mu.Lock()
	d.downAt = time.Now()
	d.mu.Unlock()
	return d.RedisNode.Kill(ctx)
}

func (d *delayedRestart) Start(ctx context.Context) error {
	d.mu.Lock()
	wait := time.Until(d.downAt.Add(d.delay))
	d.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return d.RedisNode.Start(ctx)
}

// TestRedlockDelayedRestart runs the suite on volatile masters that stay
// down for 11 TTLs after a crash, longer than the longest lease the
// scenarios take (10 TTLs): the restart scenarios must hold although each
// node forgets everything, and only the fence counters are lost (S31).
func TestRedlockDelayedRestart(t *testing.T) {
	testbed.RequireDocker(t)
	h := redlockHarness(t, "R5-delayed", testbed.RedisOptions{})
	for i, s := range h.Servers {
		h.Servers[i] = &delayedRestart{RedisNode: s.(*testbed.RedisNode), delay: 11 * h.TTL}
	}
	h.Guarantees = func(g distlock.Guarantees) distlock.Guarantees {
		// The deployment's promise: no node rejoins before every lease it
		// granted has expired, so a restart cannot make a second holder.
		// Its fence counter is still lost: fences stay "monotonic".
		g.SurvivesRestart = true
		return g
	}
	conformance.Run(t, h)
}
