package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redlock"
)

func TestOpenURL(t *testing.T) {
	ctx := context.Background()
	good := []string{
		"redlock://h1:6379,h2:6380,h3:6381",
		"redlock://h1,h2,h3",
		"redlock://:secret@h1,h2,h3/2?ttl=10s&node_timeout=20ms&drift_factor=0.02&drift_fixed=5ms&dial_timeout=2s&prefix=app:&poll_interval=500ms&autoextend=1m&retry_min=1ms&retry_max=10ms",
		"redlock://127.0.0.1:1",
	}
	for _, u := range good {
		l, err := distlock.Open(ctx, u)
		if err != nil {
			t.Fatalf("Open %s: %v", u, err)
		}
		g := l.Guarantees()
		if g.Backend != "redlock" || g.Fence != distlock.FenceMonotonic || !g.PushWakeup || g.FailoverSafe || g.SurvivesRestart || g.ClockIndependentSafety {
			t.Fatalf("Guarantees %+v", g)
		}
		_ = l.Close()
	}
	l, _ := distlock.Open(ctx, good[0])
	if got := l.Guarantees().ToleratedFailures; got != 1 {
		t.Fatalf("3 nodes tolerate %d failures, want 1", got)
	}
	_ = l.Close()
	bad := []string{
		"redlock://h1,h2?bogus=1",
		"redlock://h1?ttl=-1s",
		"redlock://h1?node_timeout=abc",
		"redlock://h1?drift_factor=2",
		"redlock://h1,,h2",
		"redlock://h1,h1",
		"redlock:///",
		"redlock://h1/x",
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

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		addrs []string
		opts  *redlock.Options
	}{
		{nil, nil},
		{[]string{""}, nil},
		{[]string{"a:1", "a:1"}, nil},
		{[]string{"a:1"}, &redlock.Options{NodeTimeout: -1}},
		{[]string{"a:1"}, &redlock.Options{DriftFactor: -0.1}},
		{[]string{"a:1"}, &redlock.Options{PollInterval: -time.Second}},
		{[]string{"a:1"}, &redlock.Options{Lock: distlock.Options{TTL: -1}}},
		{[]string{"a:1"}, &redlock.Options{Prefix: "distlock:"}},
		{[]string{"a:1"}, &redlock.Options{Prefix: "app:distlock:q:"}},
	} {
		if _, err := redlock.New(c.addrs, c.opts); err == nil {
			t.Fatalf("New(%v, %+v): no error", c.addrs, c.opts)
		} else {
			wantErr(t, err, distlock.ErrInvalidArgument)
		}
	}
	l, err := redlock.New([]string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = l.TryAcquire(ctx, "")
	wantErr(t, err, distlock.ErrInvalidArgument)
	_, err = l.Acquire(ctx, "k", distlock.WithTTL(0))
	wantErr(t, err, distlock.ErrInvalidArgument)
	_, err = l.Acquire(ctx, "k", distlock.WithRetryDelay(2, 1))
	wantErr(t, err, distlock.ErrInvalidArgument)
	// Nothing listens: every node is unavailable, promptly.
	start := time.Now()
	_, err = l.TryAcquire(ctx, "k")
	wantErr(t, err, distlock.ErrUnavailable)
	notErr(t, err, distlock.ErrNotAcquired)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("TryAcquire with no server took %v", d)
	}
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = l.Acquire(cctx, "k")
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded, distlock.ErrUnavailable)
}
