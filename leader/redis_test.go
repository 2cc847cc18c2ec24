package leader_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/leader"
	"github.com/distlock/distlock/redissingle"
	"github.com/distlock/distlock/testbed"
)

// redisCandidate is one candidate process's connection: its own client
// and Locker on the shared Redis.
type redisCandidate struct {
	client *redis.Client
	locker *redissingle.Locker
}

// newRedisCandidate opens a client and a Locker on node, through a link
// of its own, both closed when t ends (again, if the test closed them).
func newRedisCandidate(t *testing.T, node *testbed.RedisNode, link string) redisCandidate {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                     node.Link(link).Addr(),
		DialTimeout:              time.Second,
		DialerRetries:            1,
		ReadTimeout:              2 * time.Second,
		WriteTimeout:             2 * time.Second,
		DisableIdentity:          true, // CLIENT SETINFO needs Redis 7.2
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	l, err := redissingle.New(c, nil)
	if err != nil {
		t.Fatalf("redissingle.New: %v", err)
	}
	t.Cleanup(func() {
		_ = l.Close()
		_ = c.Close()
	})
	return redisCandidate{c, l}
}

// TestRedisFailoverAfterCrash runs 3 candidates on one real Redis, each
// with its own client and Locker, and crashes the leader by closing its
// Locker and client at once (its watchdog stops, nothing is released): the
// key expires after its TTL and another candidate leads. The failover time
// is logged against the TTL; the bound is a generous 5 TTLs.
func TestRedisFailoverAfterCrash(t *testing.T) {
	testbed.RequireDocker(t)
	node := testbed.StartRedis(t, 1, testbed.RedisOptions{})[0]
	const ttl = time.Second
	cs := make([]redisCandidate, 3)
	ls := make([]distlock.Locker, 3)
	for i := range cs {
		cs[i] = newRedisCandidate(t, node, "candidate-"+string(rune('a'+i)))
		ls[i] = cs[i].locker
	}
	causes := []chan error{make(chan error, 1), make(chan error, 1), make(chan error, 1)}
	g := startGroup(t, ls, locktest.UniqueKey(t), blockUntilEnd(causes),
		leader.WithBackoff(100*time.Millisecond, time.Second),
		leader.WithLockOptions(distlock.WithTTL(ttl)))
	first := g.waitFor(leader.Elected, 1, 10*time.Second)[0]
	time.Sleep(ttl) // the watchdog has extended the lease at least once

	crash := time.Now()
	_ = cs[first.who].locker.Close()
	_ = cs[first.who].client.Close()
	second := g.waitFor(leader.Elected, 2, 5*ttl)[1]
	failover := second.At.Sub(crash)
	t.Logf("failover %v after the crash, TTL %v (%.2f TTL)", failover, ttl, failover.Seconds()/ttl.Seconds())
	if second.who == first.who {
		t.Fatalf("the crashed candidate %d led again", first.who)
	}
	wantIncreasing(t, []seen{first, second})

	// The crashed leader's own lease ran out locally (a crashed process
	// would not notice); it must not have outlived the server's key.
	if lost := g.of(leader.Lost); len(lost) > 0 {
		t.Logf("the crashed leader's lease ended %v after the crash, %v before the next leader was elected",
			lost[0].At.Sub(crash), second.At.Sub(lost[0].At))
		if lost[0].At.After(second.At) {
			t.Errorf("the crashed leader's lease ended after the next leader was elected")
		}
	}
	if err := g.wait(first.who, 5*time.Second); !errors.Is(err, distlock.ErrClosed) {
		t.Fatalf("Run of the crashed candidate: %v, want ErrClosed", err)
	}
	for i := range cs {
		if i != first.who {
			if err := g.stop(i); !errors.Is(err, context.Canceled) {
				t.Fatalf("Run of candidate %d: %v, want context.Canceled", i, err)
			}
		}
	}
}
