package pgadvisory_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// TestHandOffWaitsOnServer: four waiters queued on the server (with a
// retry delay of a minute, so polling cannot serve them) are each granted
// the key when the previous holder releases it, in arrival order, all
// within 10 s.
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
