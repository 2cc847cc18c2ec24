package pgadvisory_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/pgadvisory"
)

// testForceSparesReusedSession: the holder ForceRelease read releases
// its key, and its pooled session takes another key's lease before the
// termination. That lease must be spared: ForceRelease reads the lock
// again just before terminating a session.
func (s *server) testForceSparesReusedSession(t *testing.T) {
	l, op := s.locker(t, "reuse-l", nil), s.locker(t, "reuse-op", nil)
	key, other := uniqueKey(t), uniqueKey(t)+"-other"
	a := mustAcquire(t, l, key, distlock.WithTTL(time.Minute))
	pid := s.holderPID(t, key)
	pgadvisory.SetForcePause(t, 600*time.Millisecond)
	forced := make(chan error, 1)
	go func() {
		_, err := distlock.ForceRelease(context.Background(), op, key)
		forced <- err
	}()
	time.Sleep(200 * time.Millisecond) // the first reading is done; the pause runs
	mustRelease(t, a)
	b := mustAcquire(t, l, other, distlock.WithTTL(time.Minute))
	if got := s.holderPID(t, other); got != pid {
		t.Skipf("the pool gave the second lease session %d, not the first's %d: no reuse to test", got, pid)
	}
	if err := <-forced; err != nil {
		t.Fatalf("ForceRelease: %v", err)
	}
	time.Sleep(200 * time.Millisecond) // time for a termination to reach b's monitor
	select {
	case <-b.Done():
		t.Fatalf("ForceRelease of %q evicted the lease on %q that reused the session: %v", key, other, b.Err())
	default:
	}
	if err := b.Extend(ctx10(t), time.Minute); err != nil {
		t.Fatalf("the spared lease's Extend: %v", err)
	}
	mustRelease(t, b)
}

// testPreparedGidQuoting: a prepared transaction's gid is chosen by
// whoever prepared it; ForceRelease rolls it back as one literal even
// when the operator's session reads backslashes as escapes
// (standard_conforming_strings off).
func (s *server) testPreparedGidQuoting(t *testing.T) {
	cfg := s.config(t, "gid")
	cfg.RuntimeParams["standard_conforming_strings"] = "off"
	l, err := pgadvisory.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	key := uniqueKey(t)
	gid := `distlock-\'; SELECT 1; --` + key
	app := s.admin(t) // standard_conforming_strings on: only quotes double
	quoted := "'" + strings.ReplaceAll(gid, "'", "''") + "'"
	for _, q := range []string{"BEGIN", "SELECT pg_advisory_xact_lock(" + strconv.FormatInt(l.KeyID(key), 10) + ")", "PREPARE TRANSACTION " + quoted} {
		if _, err := app.Exec(ctx10(t), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		s.withAdmin(t, func(ctx context.Context, c *pgx.Conn) error {
			_, _ = c.Exec(ctx, "ROLLBACK PREPARED "+quoted)
			return nil
		})
	})
	if held, err := distlock.ForceRelease(ctx10(t), l, key); err != nil || !held {
		t.Fatalf("ForceRelease of a lock kept by prepared transaction %q = %v, %v; want true, nil", gid, held, err)
	}
	if info := locktest.MustInspect(t, l, key); info.Held {
		t.Fatalf("after ForceRelease: %+v", info)
	}
	for in, want := range map[string]string{`a`: `E'a'`, `it's`: `E'it''s'`, `a\b`: `E'a\\b'`, `\'`: `E'\\'''`} {
		if got := pgadvisory.QuoteEscaped(in); got != want {
			t.Errorf("quoteEscaped(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestListOddInput needs no server: a prefix no lock id can start with
// lists nothing, and a cursor that is no lock id is refused, before any
// request.
func TestListOddInput(t *testing.T) {
	cfg, err := pgx.ParseConfig("postgres://u@127.0.0.1:1/db?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	l, err := pgadvisory.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, prefix := range []string{"a", "1\x00", "\xff", "12 "} {
		if got, err := distlock.List(ctx10(t), l, prefix, distlock.Page{}); err != nil || len(got.Locks) != 0 {
			t.Errorf("List(%q) = %+v, %v; want nothing, nil", prefix, got, err)
		}
	}
	for _, cursor := range []string{"x", "1\x00", "\xff"} {
		_, err := distlock.List(ctx10(t), l, "", distlock.Page{Cursor: cursor})
		locktest.WantErr(t, err, distlock.ErrInvalidArgument)
	}
}
