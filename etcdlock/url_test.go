package etcdlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
)

// TestOpenURL: Open parses hosts, the prefix path and the parameters of
// valid URLs (no I/O), reports the backend's Guarantees and tolerated
// failures from the endpoints, and refuses invalid URLs with
// distlock.ErrInvalidArgument.
func TestOpenURL(t *testing.T) {
	ctx := context.Background()
	for u, prefix := range map[string]string{
		"etcd://h1:2379,h2:2379,h3:2379": "k/",
		"etcd://h1,h2,h3/locks":          "locks/k/",
		"etcd://h1/locks/?ttl=10s&autoextend=1m&retry_min=1ms&retry_max=10ms&request_timeout=200ms&poll_interval=50ms": "locks/k/",
		"etcd://h1//locks":   "/locks/k/",
		"etcd://[::1]:2379/": "k/",
	} {
		l, err := distlock.Open(ctx, u)
		if err != nil {
			t.Fatalf("Open %s: %v", u, err)
		}
		if got := l.(*etcdlock.Locker).Prefix("k"); got != prefix {
			t.Fatalf("Open %s: lock prefix of k %q, want %q", u, got, prefix)
		}
		g := l.Guarantees()
		if g.Backend != "etcd" || g.Fence != distlock.FenceDurable || g.FIFO || !g.PushWakeup || !g.FailoverSafe ||
			!g.SurvivesRestart || !g.LostNotification || !g.WaiterSessions || g.ClockIndependentSafety {
			t.Fatalf("Guarantees %+v", g)
		}
		_ = l.Close()
	}
	l, _ := distlock.Open(ctx, "etcd://h1,h2,h3")
	if got := l.Guarantees().ToleratedFailures; got != 1 {
		t.Fatalf("3 endpoints tolerate %d failures, want 1", got)
	}
	_ = l.Close()
	bad := []string{
		"etcd://h1,h2?bogus=1",
		"etcd://h1?ttl=-1s",
		"etcd://h1?request_timeout=abc",
		"etcd://h1?poll_interval=0s&request_timeout=-1s",
		"etcd://h1,,h2",
		"etcd:///",
		"etcd:opaque",
		"etcd://h1?dial_timeout=0s",
	}
	for _, u := range bad {
		if l, err := distlock.Open(ctx, u); err == nil {
			_ = l.Close()
			t.Fatalf("Open %s: no error", u)
		} else {
			wantErr(t, err, distlock.ErrInvalidArgument)
		}
	}
}

// TestOpenCredentialsUnreachable: etcd's client authenticates at once;
// Open fails with ErrUnavailable within dial_timeout.
func TestOpenCredentialsUnreachable(t *testing.T) {
	start := time.Now()
	_, err := distlock.Open(context.Background(), "etcd://user:pw@127.0.0.1:1?dial_timeout=200ms")
	wantErr(t, err, distlock.ErrUnavailable)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %v", took)
	}
}

// TestUnreachable: with no server, calls fail with ErrUnavailable within
// their context instead of hanging, and Close returns.
func TestUnreachable(t *testing.T) {
	l, err := distlock.Open(context.Background(), "etcd://127.0.0.1:1?ttl=3s")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err = l.TryAcquire(ctx, "k")
	wantErr(t, err, distlock.ErrUnavailable)
	_, err = l.Acquire(ctx, "k")
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %v", took)
	}
}
