package redissingle_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redissingle"
)

// TestSchemesRegistered checks that importing the package registers the
// standalone, Sentinel and Cluster schemes, plaintext and TLS.
func TestSchemesRegistered(t *testing.T) {
	for _, s := range []string{"redis", "rediss", "redis+sentinel", "rediss+sentinel", "redis+cluster", "rediss+cluster"} {
		if !slices.Contains(distlock.Schemes(), s) {
			t.Fatalf("scheme %q not registered: %v", s, distlock.Schemes())
		}
	}
}

// TestOpenRejects checks that malformed, out-of-range and unknown URL
// parameters (ours and go-redis's) are refused with ErrInvalidArgument.
// It needs no server: Open does no I/O.
func TestOpenRejects(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{
		"redis://127.0.0.1:1/0?bogus=1",             // unknown to us and to go-redis
		"redis://127.0.0.1:1/0?ttl=soon",            // ours, malformed
		"redis://127.0.0.1:1/0?ttl=-1s",             // ours, out of range
		"redis://127.0.0.1:1/0?prefix={x}",          // ours, invalid
		"redis://127.0.0.1:1/0?prefix=distlock:",    // ours, reserved
		"redis://127.0.0.1:1/0?dial_timeout=banana", // go-redis's, malformed
		"redis://127.0.0.1:1/0?wait_replicas=x",
		"redis://127.0.0.1:1/x",                   // not a database number
		"redis://127.0.0.1:1/0?ttl=5s&prefix=%zz", // a query that does not parse
	} {
		l, err := distlock.Open(ctx, u)
		if !errors.Is(err, distlock.ErrInvalidArgument) {
			if l != nil {
				_ = l.Close()
			}
			t.Fatalf("Open(%q): %v, want ErrInvalidArgument", u, err)
		}
	}
}

// TestOpen checks that a Locker opened by URL applies its parameters (TTL,
// prefix), and that its Close closes the client it owns.
func TestOpen(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	u := "redis://" + s.node.Addr() + "/0?ttl=5s&retry_min=1ms&retry_max=2ms&prefix=app:&poll_interval=1s&dial_timeout=1s&max_retries=1"
	l, err := distlock.Open(ctx, u)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, ok := l.(*redissingle.Locker); !ok {
		t.Fatalf("Open returned %T", l)
	}
	key := uniqueKey(t)
	ls := mustAcquire(t, l, key)
	if got := s.admin().Get(ctx, "app:"+key).Val(); got != ls.Token() {
		t.Fatalf("key app:%s = %q, want the token (prefix not applied?)", key, got)
	}
	if left := time.Until(ls.ValidUntil()); left > 5*time.Second || left < 4*time.Second {
		t.Fatalf("validity %v with ttl=5s", left)
	}
	mustRelease(t, ls)
	held := mustAcquire(t, l, key)
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err = l.TryAcquire(ctx, key)
	wantErr(t, err, distlock.ErrClosed)
	if err := ls.Release(ctx); err != nil { // idempotent: the first call's result
		t.Fatalf("second Release: %v", err)
	}
	// The Locker owned its client: Close closed it.
	wantErr(t, held.Release(ctx), distlock.ErrUnavailable)
	if err := s.admin().Del(ctx, "app:"+key).Err(); err != nil {
		t.Fatal(err)
	}
}
