package redissingle_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redissingle"
	"github.com/distlock/distlock/testbed"
)

// TestUnreachable needs no container: nothing listens on the port.
func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	l, err := redissingle.New(newClient(t, addr), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()

	start := time.Now()
	_, err = l.TryAcquire(ctx, "k")
	wantErr(t, err, distlock.ErrUnavailable)
	if errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("outage reported as contention: %v", err)
	}
	d := time.Since(start)
	t.Logf("TryAcquire against a closed port: %v after %v", err, d)
	if d > 2*time.Second {
		t.Fatalf("TryAcquire took %v", d)
	}

	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start = time.Now()
	_, err = l.Acquire(cctx, "k")
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded, distlock.ErrUnavailable)
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("Acquire with a 1s deadline took %v", d)
	}
}

// TestPausedServer: a frozen server answers nothing; calls still return
// when their context ends, and an acquisition that the server runs after
// it resumes is released by the clean-up.
func TestPausedServer(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	l := s.locker(t, "a", nil)
	key := uniqueKey(t)
	mustRelease(t, mustAcquire(t, l, uniqueKey(t))) // warm up

	if err := s.node.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	paused := true
	defer func() {
		if paused {
			_ = s.node.Unpause(ctx)
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := l.TryAcquire(cctx, key)
	wantErr(t, err, distlock.ErrUnavailable, context.DeadlineExceeded)
	if d := time.Since(start); d > 700*time.Millisecond {
		t.Fatalf("TryAcquire with a 200ms deadline took %v", d)
	}
	start = time.Now()
	_, err = l.Acquire(cctx, key)
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("Acquire with an expired deadline took %v", d)
	}

	if err := s.node.Unpause(ctx); err != nil {
		t.Fatal(err)
	}
	paused = false
	eventually(t, 5*time.Second, "the abandoned acquisition was not cleaned up", func() bool {
		return len(s.leftovers(t, key)) == 0
	})
	mustRelease(t, mustAcquire(t, s.locker(t, "b", nil), key))
}

// TestWaitReplicas: with WaitReplicas, an acquisition that no replica
// acknowledges is released and fails with a *ReplicationError.
func TestWaitReplicas(t *testing.T) {
	testbed.RequireDocker(t)
	rep := testbed.StartRedisReplicated(t, testbed.RedisOptions{})
	ctx := context.Background()
	l, err := redissingle.New(newClient(t, rep.Primary.Addr()), &redissingle.Options{WaitReplicas: 1, WaitTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	key := uniqueKey(t)

	ls := mustAcquire(t, l, key)
	eventually(t, 2*time.Second, "the replica does not have the acknowledged lock", func() bool {
		return rep.Replica.Admin().Get(ctx, key).Val() == ls.Token()
	})
	mustRelease(t, ls)

	if err := rep.Replica.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rep.Replica.Unpause(ctx) }()
	_, err = l.TryAcquire(ctx, key)
	var re *redissingle.ReplicationError
	if !errors.As(err, &re) || re.Acked != 0 || re.Want != 1 {
		t.Fatalf("TryAcquire with the replica paused: %v, want a ReplicationError 0 of 1", err)
	}
	wantErr(t, err, distlock.ErrUnavailable)
	if n := rep.Primary.Admin().Exists(ctx, key).Val(); n != 0 {
		t.Fatal("the unacknowledged lock was not released")
	}
}
