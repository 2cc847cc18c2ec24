package pgadvisory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/pgadvisory"
)

// TestAcquireReleaseFence: three acquisitions of one key in turn each get
// a larger fence and a validity of about the TTL; while held, pg_locks
// shows one holder and another Locker's TryAcquire gets ErrNotAcquired
// (not ErrUnavailable); after Release the lock is gone from pg_locks,
// Done is closed and Err and Extend report ErrReleased. The connection
// returns to the pool: each Locker keeps one session.
func TestAcquireReleaseFence(t *testing.T) {
	s := startPostgres(t)
	ctx := context.Background()
	l := s.locker(t, "a", nil)
	other := s.locker(t, "b", nil)
	key := uniqueKey(t)
	id := l.KeyID(key)

	var last uint64
	for i := 0; i < 3; i++ {
		ls := mustAcquire(t, l, key, distlock.WithTTL(5*time.Second))
		if ls.Fence() <= last {
			t.Fatalf("fence %d after %d: not increasing", ls.Fence(), last)
		}
		last = ls.Fence()
		if left := time.Until(ls.ValidUntil()); left > 5*time.Second || left < 4*time.Second {
			t.Fatalf("validity %v with a 5s TTL", left)
		}
		if held, _ := s.holders(t, id); len(held) != 1 {
			t.Fatalf("pg_locks: %d holders", len(held))
		}
		_, err := other.TryAcquire(ctx, key)
		wantErr(t, err, distlock.ErrNotAcquired)
		if errors.Is(err, distlock.ErrUnavailable) {
			t.Fatalf("contention reported as an outage: %v", err)
		}
		mustRelease(t, ls)
		if held, _ := s.holders(t, id); len(held) != 0 {
			t.Fatalf("pg_locks: still held after release by %v", held)
		}
		select {
		case <-ls.Done():
		default:
			t.Fatal("Done not closed after Release")
		}
		wantErr(t, ls.Err(), distlock.ErrReleased)
		wantErr(t, ls.Extend(ctx, time.Second), distlock.ErrReleased)
	}
	// The connection went back to the pool: one session serves them all,
	// and it holds no lock and no idle timeout while idle.
	admin := s.admin(t)
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'distlock'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("%d distlock sessions, want 2 (one per Locker)", n)
	}
}

// TestTwoLeasesOneLocker: a second lease on a held key from the same
// Locker is refused (it does not reuse the holder's connection, where
// advisory locks would stack), while another key is granted.
func TestTwoLeasesOneLocker(t *testing.T) {
	s := startPostgres(t)
	l := s.locker(t, "a", nil)
	key := uniqueKey(t)
	a := mustAcquire(t, l, key)
	// Advisory locks stack within a session: a second lease must not reuse
	// the first one's connection.
	_, err := l.TryAcquire(context.Background(), key)
	wantErr(t, err, distlock.ErrNotAcquired)
	b := mustAcquire(t, l, key+"/other")
	mustRelease(t, a)
	mustRelease(t, b)
}

// TestAcquireIDInteroperates: TryAcquireID(42) holds the same lock as an
// application's own pg_advisory_lock(42): each excludes the other, and the
// lease's Key is "42".
func TestAcquireIDInteroperates(t *testing.T) {
	s := startPostgres(t)
	ctx := context.Background()
	l := s.locker(t, "a", nil)
	ls, err := l.TryAcquireID(ctx, 42)
	if err != nil {
		t.Fatal(err)
	}
	if ls.Key() != "42" {
		t.Fatalf("Key %q", ls.Key())
	}
	admin := s.admin(t)
	var got bool
	if err := admin.QueryRow(ctx, "SELECT pg_try_advisory_lock(42)").Scan(&got); err != nil || got {
		t.Fatalf("raw pg_try_advisory_lock(42) while the lease holds it: %v %v", got, err)
	}
	mustRelease(t, ls)
	if err := admin.QueryRow(ctx, "SELECT pg_try_advisory_lock(42)").Scan(&got); err != nil || !got {
		t.Fatalf("raw lock after release: %v %v", got, err)
	}
	_, err = l.TryAcquireID(ctx, 42)
	wantErr(t, err, distlock.ErrNotAcquired)
}

// TestBadInput: a nil config, a malformed fence sequence, an empty key, a
// zero TTL and a TTL above MaxTTL give ErrInvalidArgument; an ended
// context gives ErrNotAcquired and context.Canceled; a closed Locker gives
// ErrClosed, and a second Close returns nil. All before any I/O: it needs
// no server.
func TestBadInput(t *testing.T) {
	cfg, err := pgx.ParseConfig("postgres://u@127.0.0.1:1/db?sslmode=disable&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgadvisory.New(nil, nil); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("New(nil): %v", err)
	}
	if _, err := pgadvisory.New(cfg, &pgadvisory.Options{FenceSequence: "a.b.c"}); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("bad sequence: %v", err)
	}
	l, err := pgadvisory.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = l.Acquire(ctx, "")
	wantErr(t, err, distlock.ErrInvalidArgument)
	_, err = l.TryAcquire(ctx, "k", distlock.WithTTL(0))
	wantErr(t, err, distlock.ErrInvalidArgument)
	_, err = l.Acquire(ctx, "k", distlock.WithTTL(30*24*time.Hour))
	wantErr(t, err, distlock.ErrInvalidArgument)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = l.TryAcquire(cctx, "k")
	wantErr(t, err, distlock.ErrNotAcquired, context.Canceled)
	_, err = l.Acquire(cctx, "k")
	wantErr(t, err, distlock.ErrNotAcquired, context.Canceled)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = l.TryAcquire(ctx, "k")
	wantErr(t, err, distlock.ErrClosed)
	_, err = l.AcquireID(ctx, 1)
	wantErr(t, err, distlock.ErrClosed)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
