package pgadvisory_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/pgadvisory"
)

// testPreparedLeak: a transaction lock kept by a prepared transaction has
// no session and never expires: Inspect and List report it as a leak,
// and ForceRelease rolls the transaction back.
func (s *server) testPreparedLeak(t *testing.T) {
	l := s.locker(t, "leak", nil)
	key := uniqueKey(t)
	gid := "distlock-" + key
	app := s.admin(t)
	if _, err := app.Exec(ctx10(t), "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec(ctx10(t), "SELECT pg_advisory_xact_lock($1)", l.KeyID(key)); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec(ctx10(t), "PREPARE TRANSACTION '"+gid+"'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.withAdmin(t, func(ctx context.Context, c *pgx.Conn) error {
			_, _ = c.Exec(ctx, "ROLLBACK PREPARED '"+gid+"'")
			return nil
		})
	})
	_ = app.Close(ctx10(t)) // the lock outlives the session

	info := locktest.MustInspect(t, l, key)
	if !info.Held || info.Holder != "prepared:"+gid || !strings.Contains(info.Leak, gid) {
		t.Fatalf("Inspect of a prepared transaction's lock: %+v", info)
	}
	id := strconv.FormatInt(l.KeyID(key), 10)
	lst, err := distlock.List(ctx10(t), l, id, distlock.Page{})
	if err != nil || len(lst.Locks) != 1 || lst.Locks[0].Leak == "" {
		t.Fatalf("List(%s) = %+v, %v; want the leak", id, lst, err)
	}
	_, err = l.TryAcquire(ctx10(t), key)
	wantErr(t, err, distlock.ErrNotAcquired)
	if held, err := distlock.ForceRelease(ctx10(t), l, key); err != nil || !held {
		t.Fatalf("ForceRelease = %v, %v; want true, nil", held, err)
	}
	var n int
	s.withAdmin(t, func(ctx context.Context, c *pgx.Conn) error {
		return c.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_xacts WHERE gid = $1", gid).Scan(&n)
	})
	if info := locktest.MustInspect(t, l, key); n != 0 || info.Held || info.Leak != "" {
		t.Fatalf("after ForceRelease: %d prepared transactions %q, %+v", n, gid, info)
	}
	mustRelease(t, mustAcquire(t, l, key))
}

// testForcePrivilege: a role without the right to terminate the holder's
// session can inspect but not force-release (ErrNotSupported naming
// pg_signal_backend, the lease untouched); with pg_signal_backend it can,
// except for a superuser's session.
func (s *server) testForcePrivilege(t *testing.T) {
	suffix := strconv.FormatUint(rand.Uint64()%1e9, 10)
	holderRole, opRole := "holder_"+suffix, "operator_"+suffix
	su := s.locker(t, "priv-su", nil)
	mustRelease(t, mustAcquire(t, su, uniqueKey(t))) // the fence sequence exists
	s.withAdmin(t, func(ctx context.Context, c *pgx.Conn) error {
		for _, q := range []string{
			"CREATE ROLE " + holderRole + " LOGIN", "CREATE ROLE " + opRole + " LOGIN",
			"GRANT USAGE ON SEQUENCE " + pgadvisory.DefaultFenceSequence + " TO " + holderRole,
		} {
			if _, err := c.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	as := func(role string) *pgadvisory.Locker {
		cfg := s.config(t, "priv-"+role)
		cfg.User = role
		l, err := pgadvisory.New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	holder, op := as(holderRole), as(opRole)

	key := uniqueKey(t)
	ls := mustAcquire(t, holder, key, distlock.WithTTL(time.Minute))
	if info := locktest.MustInspect(t, op, key); !info.Held || info.Holder != pidHolder(s.holderPID(t, key)) {
		t.Fatalf("Inspect by an unprivileged role: %+v", info)
	}
	held, err := distlock.ForceRelease(ctx10(t), op, key)
	wantErr(t, err, distlock.ErrNotSupported)
	if errors.Is(err, distlock.ErrUnavailable) || !strings.Contains(err.Error(), "pg_signal_backend") || !strings.Contains(err.Error(), opRole) {
		t.Fatalf("ForceRelease without the privilege: %v; want ErrNotSupported naming pg_signal_backend and %s", err, opRole)
	}
	t.Logf("without the privilege: held %v, %v", held, err)
	if ls.Err() != nil || !locktest.MustInspect(t, op, key).Held {
		t.Fatalf("a refused ForceRelease evicted the holder: %v", ls.Err())
	}

	s.withAdmin(t, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "GRANT pg_signal_backend TO "+opRole)
		return err
	})
	if held, err := distlock.ForceRelease(ctx10(t), op, key); err != nil || !held {
		t.Fatalf("ForceRelease with pg_signal_backend = %v, %v; want true, nil", held, err)
	}
	select {
	case <-ls.Done():
	case <-time.After(lostWithin):
		t.Fatal("the evicted lease's Done did not fire")
	}

	suKey := uniqueKey(t) + "-su"
	suLease := mustAcquire(t, su, suKey, distlock.WithTTL(time.Minute))
	defer mustRelease(t, suLease)
	_, err = distlock.ForceRelease(ctx10(t), op, suKey)
	wantErr(t, err, distlock.ErrNotSupported)
}

// testInspectBounded: with the server unreachable (its link blackholed),
// Inspect, List and ForceRelease under context.Background() return
// within Options.RequestTimeout plus the closing of the connection left
// in doubt, with ErrUnavailable; on a pooled connection and connecting.
func (s *server) testInspectBounded(t *testing.T) {
	const timeout, slack = 300 * time.Millisecond, 2500 * time.Millisecond
	opts := &pgadvisory.Options{RequestTimeout: timeout}
	pooled := s.locker(t, "bounded-pooled", opts)
	locktest.MustInspect(t, pooled, "k") // a pooled connection
	fresh := s.locker(t, "bounded-fresh", opts)
	for _, link := range []string{"bounded-pooled", "bounded-fresh"} {
		s.node.Link(link).Blackhole()
		defer s.node.Link(link).Heal()
	}
	for name, l := range map[string]*pgadvisory.Locker{"pooled": pooled, "connecting": fresh} {
		for op, call := range map[string]func() error{
			"Inspect":      func() error { _, err := l.Inspect(context.Background(), "k"); return err },
			"List":         func() error { _, err := l.List(context.Background(), "", distlock.Page{}); return err },
			"ForceRelease": func() error { _, err := l.ForceRelease(context.Background(), "k"); return err },
		} {
			start := time.Now()
			err := call()
			took := time.Since(start)
			wantErr(t, err, distlock.ErrUnavailable)
			if took > timeout+slack {
				t.Errorf("%s %s on an unreachable server returned after %v", name, op, took.Round(time.Millisecond))
			}
		}
	}
}
