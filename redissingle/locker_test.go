package redissingle_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redissingle"
)

// TestLocker covers single acquisitions on one shared server: contention,
// fences, expiry, extension and the watchdog, arguments and Close.
func TestLocker(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()

	t.Run("AcquireReleaseContention", func(t *testing.T) {
		t.Parallel()
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
		mustRelease(t, ls)
		wantErr(t, ls.Err(), distlock.ErrReleased)
		select {
		case <-ls.Done():
		default:
			t.Fatal("Done not closed after Release")
		}
		if err := ls.Release(ctx); err != nil {
			t.Fatalf("second Release: %v (want the first call's nil)", err)
		}
		ls2, err := b.TryAcquire(ctx, key)
		if err != nil {
			t.Fatalf("TryAcquire after release: %v", err)
		}
		mustRelease(t, ls2)
		if left := s.leftovers(t, key); len(left) > 0 {
			t.Fatalf("keys left after release: %v", left)
		}
	})

	t.Run("FenceIncreasing", func(t *testing.T) {
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
	})

	t.Run("ReleaseAfterExpiryKeepsNextOwner", func(t *testing.T) {
		t.Parallel()
		a, b := s.locker(t, "a", nil), s.locker(t, "b", nil)
		key := uniqueKey(t)
		la := mustAcquire(t, a, key, distlock.WithTTL(200*time.Millisecond))
		select {
		case <-la.Done():
		case <-time.After(2 * time.Second):
			t.Fatal("Done not closed after the TTL")
		}
		wantErr(t, la.Err(), distlock.ErrLeaseLost)
		lb := mustAcquire(t, b, key)
		if lb.Fence() <= la.Fence() {
			t.Fatalf("fence %d after %d", lb.Fence(), la.Fence())
		}
		wantErr(t, la.Release(ctx), distlock.ErrLeaseLost)
		if got := s.admin().Get(ctx, key).Val(); !strings.HasPrefix(got, lb.Token()) {
			t.Fatalf("the old holder's release touched the new owner's key: value %q", got)
		}
		if err := lb.Extend(ctx, time.Minute); err != nil {
			t.Fatalf("new owner's Extend: %v", err)
		}
		mustRelease(t, lb)
	})

	t.Run("ExtendAfterExpiryDoesNotRecreate", func(t *testing.T) {
		t.Parallel()
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
	})

	t.Run("WatchdogKeepsLeaseAndStopsOnRelease", func(t *testing.T) {
		t.Parallel()
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
	})

	t.Run("InvalidArguments", func(t *testing.T) {
		t.Parallel()
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
	})

	t.Run("Closed", func(t *testing.T) {
		t.Parallel()
		c := newClient(t, s.node.Addr())
		l, err := redissingle.New(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		key := uniqueKey(t)
		held := mustAcquire(t, l, key)
		other := s.locker(t, "b", nil)
		blocked := make(chan error, 1)
		go func() {
			// A waiter of the Locker being closed.
			_, err := l.Acquire(ctx, key)
			blocked <- err
		}()
		time.Sleep(100 * time.Millisecond)
		if err := l.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		select {
		case err := <-blocked:
			wantErr(t, err, distlock.ErrClosed)
		case <-time.After(2 * time.Second):
			t.Fatal("blocked Acquire not woken by Close")
		}
		if err := l.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		_, err = l.Acquire(ctx, key)
		wantErr(t, err, distlock.ErrClosed)
		_, err = l.TryAcquire(ctx, key)
		wantErr(t, err, distlock.ErrClosed)
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("Close closed the caller's client: %v", err)
		}
		mustRelease(t, held) // a lease outlives its Locker while the client is open
		mustRelease(t, mustAcquire(t, other, key))
		if left := s.leftovers(t, key); len(left) > 0 {
			t.Fatalf("keys left: %v", left)
		}
	})

	t.Run("Guarantees", func(t *testing.T) {
		g := s.locker(t, "a", nil).Guarantees()
		want := distlock.Guarantees{
			Backend: "redis", Fence: distlock.FenceMonotonic, FenceScope: g.FenceScope,
			FIFO: true, PushWakeup: true, LostNotification: true, CrossProcess: true,
		}
		if g != want || g.FenceScope == "" {
			t.Fatalf("Guarantees %+v", g)
		}
	})
}
