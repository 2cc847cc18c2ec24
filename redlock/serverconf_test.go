package redlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redlock"
	"github.com/distlock/distlock/testbed"
)

// TestEvictingNode: a node that may evict keys (maxmemory with
// volatile-lru) makes every acquisition fail with ErrInvalidArgument
// naming the node, the policy and both fixes, writing nothing; a check cut
// short or answered BUSY judges nothing; AllowEviction and
// allow_eviction=true accept the node; once the setting is fixed, the
// Locker acquires.
func TestEvictingNode(t *testing.T) {
	testbed.RequireDocker(t)
	safe := testbed.StartRedis(t, 2, testbed.RedisOptions{})
	risky := testbed.StartRedis(t, 1, testbed.RedisOptions{
		Args: []string{"--maxmemory", "100mb", "--maxmemory-policy", "volatile-lru"},
	})[0]
	addrs := []string{safe[0].Addr(), safe[1].Addr(), risky.Addr()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := redlock.New(addrs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	key := uniqueKey(t)

	t.Run("Refused", func(t *testing.T) { wantEvictionRefused(t, ctx, l, key, risky, append(safe, risky)) })
	t.Run("CheckCutShort", func(t *testing.T) {
		// A check cut short by the caller's context leaves the node
		// unjudged for the next call.
		cctx, ccancel := context.WithCancel(ctx)
		ccancel()
		_, _ = l.Acquire(cctx, key)
		_, err := l.TryAcquire(ctx, key)
		wantErr(t, err, distlock.ErrInvalidArgument)
	})
	t.Run("Busy", func(t *testing.T) { checkBusyNodeUnjudged(t, ctx, l, key, risky) })
	t.Run("Allowed", func(t *testing.T) {
		allowed, err := redlock.New(addrs, &redlock.Options{AllowEviction: true})
		if err != nil {
			t.Fatal(err)
		}
		defer allowed.Close()
		mustRelease(t, mustAcquire(t, allowed, key))
		byURL, err := distlock.Open(ctx, "redlock://"+strings.Join(addrs, ",")+"?allow_eviction=true")
		if err != nil {
			t.Fatal(err)
		}
		defer byURL.Close()
		mustRelease(t, mustAcquire(t, byURL, key))
	})
	t.Run("Fixed", func(t *testing.T) {
		if err := risky.Admin().ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
			t.Fatal(err)
		}
		mustRelease(t, mustAcquire(t, l, key))
	})
}

// wantEvictionRefused checks that TryAcquire and Acquire of key on l fail
// with a one-line ErrInvalidArgument naming risky's address, its policy
// and both fixes, and that no node holds anything of key.
func wantEvictionRefused(t *testing.T, ctx context.Context, l *redlock.Locker, key string, risky *testbed.RedisNode, nodes []*testbed.RedisNode) {
	t.Helper()
	_, err := l.TryAcquire(ctx, key)
	wantErr(t, err, distlock.ErrInvalidArgument)
	for _, part := range []string{risky.Addr(), "volatile-lru", "noeviction", "AllowEviction", "allow_eviction=true"} {
		if !strings.Contains(err.Error(), part) {
			t.Fatalf("error %q does not name %q", err, part)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error is not one line: %q", err)
	}
	actx, acancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = l.Acquire(actx, key)
	acancel()
	wantErr(t, err, distlock.ErrInvalidArgument)
	for i, n := range nodes {
		if k, _ := n.Admin().Keys(ctx, "*"+key+"*").Result(); len(k) > 0 {
			t.Fatalf("node %d: a refused acquisition wrote %v", i, k)
		}
	}
}

// checkBusyNodeUnjudged makes risky run a script for 0.8 s: its BUSY
// answer judges nothing (the node is used unjudged meanwhile), and once it
// is free, the next read (rejudgeAfter later) refuses it again.
func checkBusyNodeUnjudged(t *testing.T, ctx context.Context, l *redlock.Locker, key string, risky *testbed.RedisNode) {
	t.Helper()
	if err := risky.Admin().ConfigSet(ctx, "busy-reply-threshold", "50").Err(); err != nil {
		t.Fatal(err)
	}
	busy := make(chan error, 1)
	go func() {
		busy <- risky.Admin().Eval(ctx, `local t = redis.call('TIME'); local s = t[1] + t[2] / 1e6
			repeat local n = redis.call('TIME') until n[1] + n[2] / 1e6 - s > 0.8
			return 1`, nil).Err()
	}()
	time.Sleep(200 * time.Millisecond)
	if ls, err := l.TryAcquire(ctx, key); err == nil { // the node is used unjudged
		mustRelease(t, ls)
	} else {
		t.Logf("while the node runs a script: %v", err)
	}
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	_, err := l.TryAcquire(ctx, key)
	wantErr(t, err, distlock.ErrInvalidArgument)
}
