package pgadvisory_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/pgadvisory"
)

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
