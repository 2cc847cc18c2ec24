package pgadvisory_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/pgadvisory"
)

// TestBadInput needs no server: arguments are checked before any I/O.
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

// TestUnreachable needs no container: nothing listens on the port.
func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://u@%s/db?sslmode=disable&connect_timeout=1", addr))
	if err != nil {
		t.Fatal(err)
	}
	l, err := pgadvisory.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	_, err = l.TryAcquire(ctx, "k")
	wantErr(t, err, distlock.ErrUnavailable)
	if errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("outage reported as contention: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	_, err = l.Acquire(cctx, "k")
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded, distlock.ErrUnavailable)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Acquire with a 1s deadline took %v", d)
	}
}

// TestBlackholedHolder: the holder is cut off; the server ends its idle
// session within the TTL, and the holder learns it lost the lease before
// another client gets the key.
func TestBlackholedHolder(t *testing.T) {
	s := startPostgres(t)
	l, other := s.locker(t, "a", nil), s.locker(t, "b", nil)
	key := uniqueKey(t)
	ttl := time.Second
	ls := mustAcquire(t, l, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))
	cutHolder(t, s, "a", other, key, ls, ttl)
}

// cutHolder black-holes link, the holder's of key (held as ls under a TTL
// of ttl), and checks that other acquires key within ttl + 1 s (the
// server ends the holder's session at its idle timeout, the TTL), that
// the holder was told first, and that its Release then reports the loss.
func cutHolder(t *testing.T, s *server, link string, other *pgadvisory.Locker, key string, ls distlock.Lease, ttl time.Duration) {
	t.Helper()
	l := s.node.Link(link)
	cut := time.Now()
	l.Blackhole()
	defer l.Heal()
	ctx, cancel := context.WithTimeout(context.Background(), 5*ttl)
	defer cancel()
	next, err := other.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("nobody acquired after the holder was cut off: %v", err)
	}
	took := time.Since(cut)
	select {
	case <-ls.Done():
	default:
		t.Fatal("the other client acquired before the holder was told")
	}
	wantErr(t, ls.Err(), distlock.ErrLeaseLost)
	if took > ttl+time.Second {
		t.Fatalf("freed %v after the cut, TTL %v: the session's idle timeout was not the TTL", took, ttl)
	}
	t.Logf("freed %v after the cut", took)
	mustRelease(t, next)
	l.Heal()
	wantErr(t, ls.Release(context.Background()), distlock.ErrLeaseLost)
}

// TestReplyLost: the lock statement reaches the server but its reply is
// dropped; the connection is closed, so the key is free soon after.
func TestReplyLost(t *testing.T) {
	s := startPostgres(t)
	l, other := s.locker(t, "a", nil), s.locker(t, "b", nil)
	key := uniqueKey(t)
	mustRelease(t, mustAcquire(t, l, key+"/warm"))
	link := s.node.Link("a")
	link.DropReplies()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := l.TryAcquire(ctx, key, distlock.WithTTL(time.Minute))
	cancel()
	link.Heal()
	wantErr(t, err, distlock.ErrUnavailable)
	start := time.Now()
	ls := mustAcquire(t, other, key)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the possibly taken key was freed only after %v", d)
	}
	mustRelease(t, ls)
}

// TestServerRestart: a restart ends the holder's session: Done fires, and
// the Locker serves again once the server is back.
func TestServerRestart(t *testing.T) {
	s := startPostgres(t)
	l := s.locker(t, "a", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, l, key, distlock.WithTTL(time.Minute))
	idle := mustAcquire(t, l, key+"/idle") // leaves a pooled connection to go stale
	mustRelease(t, idle)
	f := ls.Fence()
	ctx := context.Background()
	if err := s.node.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ls.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done did not fire when the server went down")
	}
	wantErr(t, ls.Err(), distlock.ErrLeaseLost)
	next := mustAcquire(t, l, key)
	if next.Fence() <= f {
		t.Fatalf("fence %d after the restart, %d before: not durable", next.Fence(), f)
	}
	mustRelease(t, next)
}

// TestLockTableFull: with the shared lock table full, acquisitions fail
// at once with a *LockTableFullError instead of hanging.
func TestLockTableFull(t *testing.T) {
	s := startPostgres(t, "-c", "max_locks_per_transaction=10", "-c", "max_connections=20")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := s.admin(t)
	l := s.locker(t, "a", nil)
	mustRelease(t, mustAcquire(t, l, uniqueKey(t))) // a pooled connection: the lock statement meets the full table
	// Fill the table from one session: lock IDs until the server refuses.
	var filled int
	for filled = 0; filled < 1_000_000; filled++ {
		if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(filled)); err != nil {
			var pe interface{ SQLState() string }
			if !errors.As(err, &pe) || pe.SQLState() != "53200" {
				t.Fatalf("after %d locks: %v", filled, err)
			}
			break
		}
	}
	t.Logf("the lock table took %d locks", filled)
	_, err := l.TryAcquire(ctx, uniqueKey(t))
	var full *pgadvisory.LockTableFullError
	if !errors.As(err, &full) {
		t.Fatalf("TryAcquire with the table full: %v", err)
	}
	// A new connection cannot even start a session: the same error.
	_, err = s.locker(t, "b", nil).TryAcquire(ctx, uniqueKey(t))
	if !errors.As(err, &full) {
		t.Fatalf("TryAcquire on a new connection with the table full: %v", err)
	}
	wantErr(t, err, distlock.ErrUnavailable)
	start := time.Now()
	_, err = l.Acquire(ctx, uniqueKey(t))
	if !errors.As(err, &full) {
		t.Fatalf("Acquire with the table full: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Acquire took %v to report a full table", d)
	}
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_unlock_all()"); err != nil {
		t.Fatal(err)
	}
	mustRelease(t, mustAcquire(t, l, uniqueKey(t)))
}

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

// TestCutOffWaiter: a waiter black-holed from the server gives up with an
// error within about a TTL instead of waiting on, and its queue entry does
// not block the next client.
func TestCutOffWaiter(t *testing.T) {
	s := startPostgres(t)
	holder, waiter, next := s.locker(t, "h", nil), s.locker(t, "w", nil), s.locker(t, "n", nil)
	key := uniqueKey(t)
	ttl := time.Second
	ls := mustAcquire(t, holder, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))
	res := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*ttl)
		defer cancel()
		wl, err := waiter.Acquire(ctx, key, distlock.WithTTL(ttl))
		if err == nil {
			_ = wl.Release(context.Background())
		}
		res <- err
	}()
	eventually(t, 5*time.Second, "waiter did not queue", func() bool {
		_, waiting := s.holders(t, holder.KeyID(key))
		return len(waiting) == 1
	})
	link := s.node.Link("w")
	cut := time.Now()
	link.Blackhole()
	defer link.Heal()
	select {
	case err := <-res:
		wantErr(t, err, distlock.ErrUnavailable)
		t.Logf("the cut-off waiter returned %v after the cut: %v", time.Since(cut), err)
	case <-time.After(5 * ttl):
		t.Fatal("the cut-off waiter kept waiting")
	}
	mustRelease(t, ls)
	ctx, cancel := context.WithTimeout(context.Background(), 3*ttl)
	defer cancel()
	nl, err := next.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("the next client could not acquire after the release: %v", err)
	}
	mustRelease(t, nl)
}
