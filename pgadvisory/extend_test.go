package pgadvisory_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/pgadvisory"
)

// TestTTLWithoutExtension: a lease of 1 s that is not extended is lost
// (Done, ErrLeaseLost) no sooner than its TTL less a tenth and within 3
// TTLs; its connection is closed at expiry, so another Locker is granted
// the key at once, and Release reports ErrLeaseLost.
func TestTTLWithoutExtension(t *testing.T) {
	s := startPostgres(t)
	l, other := s.locker(t, "a", nil), s.locker(t, "b", nil)
	key := uniqueKey(t)
	ttl := time.Second
	ls := mustAcquire(t, l, key, distlock.WithTTL(ttl))
	acquired := time.Now()
	select {
	case <-ls.Done():
	case <-time.After(3 * ttl):
		t.Fatal("Done did not fire after the TTL")
	}
	if d := time.Since(acquired); d < ttl-ttl/10 {
		t.Fatalf("lost after %v, before the TTL", d)
	}
	wantErr(t, ls.Err(), distlock.ErrLeaseLost)
	// The connection was closed at expiry: the key is free at once.
	next := mustAcquire(t, other, key, distlock.WithRetryDelay(time.Millisecond, 10*time.Millisecond))
	mustRelease(t, next)
	wantErr(t, ls.Release(context.Background()), distlock.ErrLeaseLost)
}

// TestAutoExtend: with automatic extension a lease of 600 ms stays held
// for 4 TTLs (another Locker's TryAcquire gets ErrNotAcquired throughout)
// and its validity stays within one TTL of now.
func TestAutoExtend(t *testing.T) {
	s := startPostgres(t)
	l, other := s.locker(t, "a", nil), s.locker(t, "b", nil)
	key := uniqueKey(t)
	ttl := 600 * time.Millisecond
	ls := mustAcquire(t, l, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))
	deadline := time.Now().Add(4 * ttl)
	for time.Now().Before(deadline) {
		if _, err := other.TryAcquire(context.Background(), key); !errors.Is(err, distlock.ErrNotAcquired) {
			t.Fatalf("TryAcquire during an extended lease: %v", err)
		}
		if err := ls.Err(); err != nil {
			t.Fatalf("lease lost under auto-extension: %v", err)
		}
		time.Sleep(ttl / 5)
	}
	if left := time.Until(ls.ValidUntil()); left <= 0 || left > ttl {
		t.Fatalf("validity %v", left)
	}
	mustRelease(t, ls)
}

const longestTTL = pgadvisory.MaxTTL

// TestTTLBeyondServerLimit: a TTL the server's millisecond timeouts cannot
// hold (above about 24.8 days) is refused with ErrInvalidArgument naming
// the longest, by Acquire and by Extend, which leaves the lease as it
// was. The longest itself is accepted, with a validity within it.
func TestTTLBeyondServerLimit(t *testing.T) {
	s := startPostgres(t)
	ctx := context.Background()
	l := s.locker(t, "a", nil)
	key := uniqueKey(t)
	tooLong := longestTTL + time.Millisecond

	_, err := l.TryAcquire(ctx, key, distlock.WithTTL(tooLong))
	wantErr(t, err, distlock.ErrInvalidArgument)
	if !strings.Contains(err.Error(), longestTTL.String()) {
		t.Fatalf("TryAcquire with TTL %v: %v; want the error to name the longest, %v", tooLong, err, longestTTL)
	}

	ls := mustAcquire(t, l, key, distlock.WithTTL(time.Minute))
	before := ls.ValidUntil()
	err = ls.Extend(ctx, tooLong)
	wantErr(t, err, distlock.ErrInvalidArgument)
	if !strings.Contains(err.Error(), longestTTL.String()) {
		t.Fatalf("Extend by %v: %v; want the error to name the longest, %v", tooLong, err, longestTTL)
	}
	if err := ls.Err(); err != nil {
		t.Fatalf("the refused Extend ended the lease: %v", err)
	}
	if after := ls.ValidUntil(); !after.Equal(before) {
		t.Fatalf("the refused Extend moved the validity by %v", after.Sub(before))
	}

	if err := ls.Extend(ctx, longestTTL); err != nil {
		t.Fatalf("Extend by the longest TTL, %v: %v", longestTTL, err)
	}
	if left := time.Until(ls.ValidUntil()); left > longestTTL || left < longestTTL-longestTTL/50 {
		t.Fatalf("validity %v after Extend by %v", left, longestTTL)
	}
	mustRelease(t, ls)
}
