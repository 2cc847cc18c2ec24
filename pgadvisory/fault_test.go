package pgadvisory_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/pgadvisory"
)

// TestUnreachable: with nothing listening on the port, TryAcquire gives
// ErrUnavailable (not ErrNotAcquired), and a blocking Acquire retries until
// its 1 s deadline, then gives ErrNotAcquired, DeadlineExceeded and the
// last ErrUnavailable. It needs no server.
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

// TestRevokedByTerminate: pg_terminate_backend on the holder's session
// fires Done within 5 s; Err, Extend and Release report ErrLeaseLost, and
// the Locker acquires the key again on a new connection.
func TestRevokedByTerminate(t *testing.T) {
	s := startPostgres(t)
	ctx := context.Background()
	l := s.locker(t, "a", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, l, key, distlock.WithTTL(time.Minute))
	held, _ := s.holders(t, l.KeyID(key))
	if len(held) != 1 {
		t.Fatal("not held")
	}
	if _, err := s.admin(t).Exec(ctx, "SELECT pg_terminate_backend($1)", held[0]); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ls.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done did not fire after pg_terminate_backend")
	}
	wantErr(t, ls.Err(), distlock.ErrLeaseLost)
	wantErr(t, ls.Extend(ctx, time.Second), distlock.ErrLeaseLost)
	wantErr(t, ls.Release(ctx), distlock.ErrLeaseLost)
	// The Locker goes on with a new connection.
	mustRelease(t, mustAcquire(t, l, key))
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

// TestInterruptedRequestLeavesNoGoroutine: pgx closes the connection of
// an interrupted request in the background (a cancel request on a new
// connection, then Terminate, then draining the socket), which on a cut
// link would last 15 s. The Locker waits for that work and bounds it:
// when TryAcquire, Extend or Release returns after its request timeout
// ended the request, no goroutine of it is left.
func TestInterruptedRequestLeavesNoGoroutine(t *testing.T) {
	s := startPostgres(t)
	ctx := context.Background()
	l, link := s.packetLocker(t, "interrupted", &pgadvisory.Options{RequestTimeout: 500 * time.Millisecond})
	extended := mustAcquire(t, l, uniqueKey(t))
	released := mustAcquire(t, l, uniqueKey(t))
	mustRelease(t, mustAcquire(t, l, uniqueKey(t))) // a pooled connection
	mustFault(t, link.Cut)
	for name, call := range map[string]func() error{
		"TryAcquire": func() error { _, err := l.TryAcquire(ctx, uniqueKey(t)); return err },
		"Extend":     func() error { return extended.Extend(ctx, distlock.DefaultTTL) },
		"Release":    func() error { return released.Release(ctx) },
	} {
		start := time.Now()
		err := call()
		wantErr(t, err, distlock.ErrUnavailable)
		if n := goroutinesIn("pgconn.(*PgConn).asyncClose"); n > 0 {
			t.Errorf("%s returned after %v with pgx still closing its connection in %d goroutine(s)", name, time.Since(start).Round(time.Millisecond), n)
		} else {
			t.Logf("%s returned after %v", name, time.Since(start).Round(time.Millisecond))
		}
	}
}

// goroutinesIn counts the goroutines whose stack mentions fn.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			count++
		}
	}
	return count
}
