package pgadvisory_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/pgadvisory"
)

// TestReleaseAfterFailedHeartbeat: a heartbeat finds the server session
// gone (pg_terminate_backend) before the monitor does, so it ends the
// hold without handing the connection back to a monitor; Release then
// returns ErrLeaseLost at once (the lease was lost first), with no
// monitor run to wait for (hold.run is nil). The monitors are
// held back for the whole test: otherwise the monitor, reading the
// connection, would notice the termination before any heartbeat.
func TestReleaseAfterFailedHeartbeat(t *testing.T) {
	s := startPostgres(t)
	pgadvisory.HoldMonitors(t)

	t.Run("Extend", func(t *testing.T) {
		l := s.locker(t, "extend", nil)
		key := uniqueKey(t)
		ls := mustAcquire(t, l, key, distlock.WithTTL(time.Minute))
		terminateHolder(t, s, l, key)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := ls.Extend(ctx, time.Minute)
		wantErr(t, err, distlock.ErrLeaseLost)
		if !strings.Contains(err.Error(), "heartbeat") {
			t.Fatalf("Extend: %v; want the heartbeat to have failed (not the monitor)", err)
		}
		wantErr(t, releaseReturns(t, ls), distlock.ErrLeaseLost)
	})

	t.Run("Watchdog", func(t *testing.T) {
		l := s.locker(t, "watchdog", nil)
		key := uniqueKey(t)
		ttl := time.Second
		ls := mustAcquire(t, l, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))
		terminateHolder(t, s, l, key)
		select {
		case <-ls.Done():
		case <-time.After(30 * ttl):
			t.Fatal("the watchdog's heartbeats did not find the terminated session")
		}
		wantErr(t, ls.Err(), distlock.ErrLeaseLost)
		if !strings.Contains(ls.Err().Error(), "heartbeat") {
			t.Fatalf("lost: %v; want a heartbeat to have failed (not the monitor)", ls.Err())
		}
		wantErr(t, releaseReturns(t, ls), distlock.ErrLeaseLost)
	})
}

// terminateHolder ends the server session holding key and waits until the
// server has freed the lock (the backend is gone).
func terminateHolder(t *testing.T, s *server, l *pgadvisory.Locker, key string) {
	t.Helper()
	held, _ := s.holders(t, l.KeyID(key))
	if len(held) != 1 {
		t.Fatalf("holders of %s: %v, want one", key, held)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.admin(t).Exec(ctx, "SELECT pg_terminate_backend($1)", held[0]); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the terminated backend still holds the lock", func() bool {
		held, _ := s.holders(t, l.KeyID(key))
		return len(held) == 0
	})
}

// releaseReturns releases ls with a context that ends after 5 s and
// returns Release's result; it fails the test if Release has not returned
// 30 s later (it hung, whatever its context).
func releaseReturns(t *testing.T, ls distlock.Lease) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- ls.Release(ctx) }()
	select {
	case err := <-errc:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Release after the failed heartbeat has not returned 30 s later (its context ended after 5 s)")
		return nil
	}
}
