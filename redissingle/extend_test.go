package redissingle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// TestExtend checks Extend and the auto-extension watchdog on one server.
func TestExtend(t *testing.T) {
	s := startRedis(t)
	t.Run("ExtendAfterExpiryDoesNotRecreate", func(t *testing.T) { extendAfterExpiry(t, s) })
	t.Run("WatchdogKeepsLeaseAndStopsOnRelease", func(t *testing.T) { extendWatchdog(t, s) })
}

// extendAfterExpiry checks that Extend resets the key's TTL while held,
// and after expiry fails with ErrLeaseLost without re-creating the key.
func extendAfterExpiry(t *testing.T, s *server) {
	t.Parallel()
	ctx := context.Background()
	l := s.locker(t, "a", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, l, key, distlock.WithTTL(150*time.Millisecond))
	if err := ls.Extend(ctx, 300*time.Millisecond); err != nil {
		t.Fatalf("Extend while held: %v", err)
	}
	if pttl := s.admin().PTTL(ctx, key).Val(); pttl < 200*time.Millisecond {
		t.Fatalf("PTTL %v after extending to 300ms", pttl)
	}
	eventually(t, 2*time.Second, "key still there after its TTL", func() bool { return s.admin().Exists(ctx, key).Val() == 0 })
	wantErr(t, ls.Extend(ctx, time.Minute), distlock.ErrLeaseLost)
	if n := s.admin().Exists(ctx, key).Val(); n != 0 {
		t.Fatal("Extend after expiry re-created the key")
	}
	wantErr(t, ls.Err(), distlock.ErrLeaseLost)
	wantErr(t, ls.Extend(ctx, 0), distlock.ErrInvalidArgument)
}

// extendWatchdog checks that the watchdog keeps a short-TTL lease held
// past its TTL, and stops on Release (the key is not re-created).
func extendWatchdog(t *testing.T, s *server) {
	t.Parallel()
	ctx := context.Background()
	a, b := s.locker(t, "a", nil), s.locker(t, "b", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key, distlock.WithTTL(time.Second), distlock.WithAutoExtend(0))
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := b.TryAcquire(ctx, key); !errors.Is(err, distlock.ErrNotAcquired) {
			t.Fatalf("TryAcquire by another while auto-extended: %v", err)
		}
		select {
		case <-ls.Done():
			t.Fatalf("lease lost under the watchdog: %v", ls.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	mustRelease(t, ls)
	if n := s.admin().Exists(ctx, key).Val(); n != 0 {
		t.Fatal("key still there after Release")
	}
	time.Sleep(500 * time.Millisecond) // a running watchdog would have extended by now
	if n := s.admin().Exists(ctx, key).Val(); n != 0 {
		t.Fatal("key re-created after Release")
	}
}
