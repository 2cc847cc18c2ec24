package redissingle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/redissingle"
)

// TestAcquire checks single acquisitions on one server: other Lockers
// cannot take a held key, which is free again after Release; fences
// increase across holders and Lockers; invalid arguments are refused; and
// Guarantees describes the backend.
func TestAcquire(t *testing.T) {
	s := startRedis(t)
	t.Run("AcquireReleaseContention", func(t *testing.T) { acquireReleaseContention(t, s) })
	t.Run("FenceIncreasing", func(t *testing.T) { acquireFenceIncreasing(t, s) })
	t.Run("InvalidArguments", func(t *testing.T) { acquireInvalidArguments(t, s) })
	t.Run("Guarantees", func(t *testing.T) { acquireGuarantees(t, s) })
}

// acquireReleaseContention checks a lease's key, token, fence and
// validity, that another Locker's TryAcquire of the held key fails with
// ErrNotAcquired (not ErrUnavailable), that Release is idempotent and
// frees the key, and that no server key is left.
func acquireReleaseContention(t *testing.T, s *server) {
	t.Parallel()
	ctx := context.Background()
	a, b := s.locker(t, "a", nil), s.locker(t, "b", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key)
	if ls.Key() != key || len(ls.Token()) < 32 || ls.Fence() == 0 {
		t.Fatalf("lease key %q token %q fence %d", ls.Key(), ls.Token(), ls.Fence())
	}
	if got := s.admin().Get(ctx, key).Val(); got != ls.Token() {
		t.Fatalf("server value %q, want the token %q", got, ls.Token())
	}
	if left := time.Until(ls.ValidUntil()); left <= 29*time.Second || left > 30*time.Second {
		t.Fatalf("validity %v, want just under the 30s default TTL", left)
	}
	_, err := b.TryAcquire(ctx, key)
	wantErr(t, err, distlock.ErrNotAcquired)
	if errors.Is(err, distlock.ErrUnavailable) {
		t.Fatalf("contention reported as unavailable: %v", err)
	}
	locktest.ReleaseTwice(t, ls)
	ls2, err := b.TryAcquire(ctx, key)
	if err != nil {
		t.Fatalf("TryAcquire after release: %v", err)
	}
	mustRelease(t, ls2)
	s.noLeftovers(t, key)
}

// acquireFenceIncreasing checks that every key's fences strictly increase
// across successive holders on three Lockers.
func acquireFenceIncreasing(t *testing.T, s *server) {
	t.Parallel()
	lockers := []*redissingle.Locker{s.locker(t, "a", nil), s.locker(t, "b", nil), s.locker(t, "c", nil)}
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = uniqueKey(t)
	}
	last := map[string]uint64{}
	for round := range 5 {
		for i, key := range keys {
			ls := mustAcquire(t, lockers[(i+round)%len(lockers)], key)
			if ls.Fence() <= last[key] {
				t.Fatalf("key %s: fence %d after %d", key, ls.Fence(), last[key])
			}
			last[key] = ls.Fence()
			mustRelease(t, ls)
		}
	}
}

// acquireInvalidArguments checks that invalid keys, per-call options and
// New options are refused with ErrInvalidArgument.
func acquireInvalidArguments(t *testing.T, s *server) {
	t.Parallel()
	ctx := context.Background()
	l := s.locker(t, "a", nil)
	_, err := l.TryAcquire(ctx, "")
	wantErr(t, err, distlock.ErrInvalidArgument)
	_, err = l.Acquire(ctx, "")
	wantErr(t, err, distlock.ErrInvalidArgument)
	_, err = l.Acquire(ctx, uniqueKey(t), distlock.WithTTL(0))
	wantErr(t, err, distlock.ErrInvalidArgument)
	_, err = l.TryAcquire(ctx, uniqueKey(t), distlock.WithTTL(-time.Second))
	wantErr(t, err, distlock.ErrInvalidArgument)
	_, err = l.Acquire(ctx, uniqueKey(t), distlock.WithRetryDelay(time.Second, time.Millisecond))
	wantErr(t, err, distlock.ErrInvalidArgument)
	c := newClient(t, s.node.Addr())
	for _, o := range []*redissingle.Options{
		{Prefix: "app{x}:"},
		{Prefix: "distlock:"},
		{Prefix: "app:distlock:x:"},
		{WaitReplicas: -1},
		{PollInterval: -time.Second},
		{Lock: distlock.Options{TTL: -time.Second}},
	} {
		if _, err := redissingle.New(c, o); !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Fatalf("New(%+v): %v, want ErrInvalidArgument", o, err)
		}
	}
	if _, err := redissingle.New(nil, nil); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("New(nil): %v", err)
	}
}

// acquireGuarantees checks the Guarantees a standalone server reports.
func acquireGuarantees(t *testing.T, s *server) {
	g := s.locker(t, "a", nil).Guarantees()
	want := distlock.Guarantees{
		Backend: "redis", Fence: distlock.FenceMonotonic, FenceScope: g.FenceScope,
		FIFO: true, PushWakeup: true, LostNotification: true, CrossProcess: true,
	}
	if g != want || g.FenceScope == "" {
		t.Fatalf("Guarantees %+v", g)
	}
}
