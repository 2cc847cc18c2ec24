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

// TestFenceSetup: a user who may not create the sequence gets a
// *FenceSetupError naming the fix; once a DBA runs it, locking works.
func TestFenceSetup(t *testing.T) {
	s := startPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := s.admin(t)
	for _, q := range []string{
		"CREATE ROLE locker LOGIN",
		"CREATE SCHEMA locks",
		"GRANT USAGE ON SCHEMA locks TO locker",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	cfg := s.config(t, "a")
	cfg.User = "locker"
	l, err := pgadvisory.New(cfg, &pgadvisory.Options{FenceSequence: "locks.fence"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = l.TryAcquire(ctx, uniqueKey(t))
	var fe *pgadvisory.FenceSetupError
	if !errors.As(err, &fe) {
		t.Fatalf("TryAcquire without the right to create the sequence: %v", err)
	}
	t.Logf("%v", err)
	if _, err := admin.Exec(ctx, fe.Fix); err != nil {
		t.Fatalf("the suggested fix %q failed: %v", fe.Fix, err)
	}
	ls, err := l.TryAcquire(ctx, uniqueKey(t))
	if err != nil {
		t.Fatalf("after the fix: %v", err)
	}
	mustRelease(t, ls)
	// The default sequence is created by a user who may.
	su := s.locker(t, "b", nil)
	mustRelease(t, mustAcquire(t, su, uniqueKey(t)))
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_class WHERE relname = 'distlock_fence' AND relkind = 'S'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("default fence sequence: %d, %v", n, err)
	}
}

// TestBadFenceSequence: a fence sequence that already exists with settings
// that break fence order (CACHE > 1: each session draws from its own
// block; CYCLE: values wrap; a negative increment: values decrease;
// MINVALUE below 1: fences of 0 or below) or that is not a sequence at all
// is refused at set-up with a one-line *FenceSequenceError
// (ErrInvalidArgument) naming the sequence and the fix. Once its owner
// runs the fix, the same Lockers lock with fences that increase across
// sessions.
func TestBadFenceSequence(t *testing.T) {
	s := startPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := s.admin(t)
	for _, tc := range []struct{ name, create, want string }{
		{"fence_cache", "CREATE SEQUENCE fence_cache CACHE 20", "CACHE 20"},
		{"fence_cycle", "CREATE SEQUENCE fence_cycle MAXVALUE 1000 CYCLE", "CYCLE"},
		{"fence_down", "CREATE SEQUENCE fence_down INCREMENT BY -1", "INCREMENT BY -1"},
		{"fence_min", "CREATE SEQUENCE fence_min MINVALUE -10 START WITH -10", "MINVALUE -10"},
		{"fence_table", "CREATE TABLE fence_table (id int)", "not a sequence"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := admin.Exec(ctx, tc.create); err != nil {
				t.Fatalf("%s: %v", tc.create, err)
			}
			l := s.locker(t, tc.name, &pgadvisory.Options{FenceSequence: tc.name})
			_, err := l.TryAcquire(ctx, uniqueKey(t))
			wantErr(t, err, distlock.ErrInvalidArgument)
			msg := err.Error()
			if !strings.Contains(msg, tc.name) || !strings.Contains(msg, tc.want) {
				t.Fatalf("TryAcquire with fence sequence %s: %q; want it to name the sequence and %q", tc.name, msg, tc.want)
			}
			if strings.Contains(msg, "\n") {
				t.Fatalf("a multi-line error: %q", msg)
			}
			t.Logf("%v", err)
			var fe *pgadvisory.FenceSequenceError
			if !errors.As(err, &fe) {
				t.Fatalf("TryAcquire: %v, want a *FenceSequenceError", err)
			}
			if tc.name == "fence_table" {
				return
			}
			if _, err := admin.Exec(ctx, fe.Fix); err != nil {
				t.Fatalf("the suggested fix %q failed: %v", fe.Fix, err)
			}
			other := s.locker(t, tc.name+"-other", &pgadvisory.Options{FenceSequence: tc.name})
			key := uniqueKey(t)
			var last uint64
			for i := 0; i < 4; i++ {
				ll := l
				if i%2 == 1 {
					ll = other
				}
				ls := mustAcquire(t, ll, key)
				if ls.Fence() <= last {
					t.Fatalf("after the fix, fence %d followed %d", ls.Fence(), last)
				}
				last = ls.Fence()
				mustRelease(t, ls)
			}
		})
	}
}
