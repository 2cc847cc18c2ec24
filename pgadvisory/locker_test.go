package pgadvisory_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/pgadvisory"
)

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

func TestHandOffWaitsOnServer(t *testing.T) {
	s := startPostgres(t)
	ctx := context.Background()
	holder := s.locker(t, "h", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, holder, key)

	const n = 4
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		w := s.locker(t, "w", nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			// A long retry delay: only the server's hand-off can be this fast.
			wl, err := w.Acquire(cctx, key, distlock.WithRetryDelay(time.Minute, time.Minute))
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			order <- i
			time.Sleep(5 * time.Millisecond)
			if err := wl.Release(ctx); err != nil {
				t.Errorf("waiter %d release: %v", i, err)
			}
		}()
		eventually(t, 10*time.Second, "waiter did not queue", func() bool {
			_, waiting := s.holders(t, holder.KeyID(key))
			return len(waiting) == i+1
		})
	}
	start := time.Now()
	mustRelease(t, ls)
	wg.Wait()
	close(order)
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("%d hand-offs took %v", n, d)
	}
	want := 0
	for i := range order {
		if i != want {
			t.Fatalf("waiter %d served before waiter %d: not in arrival order", i, want)
		}
		want++
	}
}

// TestCancelWhileWaiting: a cancelled Acquire leaves no lock and no
// waiter behind, even when the grant races the cancellation.
func TestCancelWhileWaiting(t *testing.T) {
	s := startPostgres(t)
	ctx := context.Background()
	holder := s.locker(t, "h", nil)
	waiter := s.locker(t, "w", nil)
	key := uniqueKey(t)
	id := holder.KeyID(key)

	ls := mustAcquire(t, holder, key)
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	start := time.Now()
	_, err := waiter.Acquire(cctx, key)
	cancel()
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("cancelled Acquire returned after %v", d)
	}
	eventually(t, 5*time.Second, "the cancelled waiter stayed queued", func() bool {
		_, waiting := s.holders(t, id)
		return len(waiting) == 0
	})
	mustRelease(t, ls)

	// The race: the holder releases as the waiter's context ends. Whoever
	// wins, afterwards the key is free or held by the waiter's lease.
	for i := 0; i < 20; i++ {
		ls := mustAcquire(t, holder, key)
		cctx, cancel := context.WithCancel(ctx)
		res := make(chan error, 1)
		var got distlock.Lease
		go func() {
			var err error
			got, err = waiter.Acquire(cctx, key)
			res <- err
		}()
		eventually(t, 5*time.Second, "waiter did not queue", func() bool {
			_, waiting := s.holders(t, id)
			return len(waiting) == 1
		})
		go cancel()
		mustRelease(t, ls)
		err := <-res
		cancel()
		if err == nil {
			mustRelease(t, got)
		} else {
			wantErr(t, err, distlock.ErrNotAcquired, context.Canceled)
		}
		eventually(t, 5*time.Second, "a lock was left behind by a cancelled Acquire", func() bool {
			held, waiting := s.holders(t, id)
			return len(held) == 0 && len(waiting) == 0
		})
	}
}

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

// TestWaiterSessionEnds: a waiter whose session is terminated returns an
// error at once rather than waiting on.
func TestWaiterSessionEnds(t *testing.T) {
	s := startPostgres(t)
	ctx := context.Background()
	holder, waiter := s.locker(t, "h", nil), s.locker(t, "w", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, holder, key)
	defer mustRelease(t, ls)
	res := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := waiter.Acquire(cctx, key)
		res <- err
	}()
	var waiting []int32
	eventually(t, 5*time.Second, "waiter did not queue", func() bool {
		_, waiting = s.holders(t, holder.KeyID(key))
		return len(waiting) == 1
	})
	if _, err := s.admin(t).Exec(ctx, "SELECT pg_terminate_backend($1)", waiting[0]); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-res:
		wantErr(t, err, distlock.ErrUnavailable)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter kept waiting after its session ended")
	}
}

func TestCloseWakesWaiters(t *testing.T) {
	s := startPostgres(t)
	holder := s.locker(t, "h", nil)
	waiter, err := pgadvisory.New(s.config(t, "w"), nil)
	if err != nil {
		t.Fatal(err)
	}
	key := uniqueKey(t)
	ls := mustAcquire(t, holder, key)
	defer mustRelease(t, ls)
	res := make(chan error, 1)
	go func() {
		_, err := waiter.Acquire(context.Background(), key)
		res <- err
	}()
	eventually(t, 5*time.Second, "waiter did not queue", func() bool {
		_, waiting := s.holders(t, holder.KeyID(key))
		return len(waiting) == 1
	})
	if err := waiter.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-res:
		wantErr(t, err, distlock.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the blocked Acquire")
	}
	_, err = waiter.TryAcquire(context.Background(), key)
	wantErr(t, err, distlock.ErrClosed)
}

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
