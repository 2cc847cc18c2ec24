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

// TestCloseWakesWaiters: Close ends a blocked Acquire queued on the server
// with ErrClosed within 5 s, and a later TryAcquire returns ErrClosed.
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

// TestCloseDuringHeartbeat: Close while an auto-extended lease's heartbeat
// (default TTL) waits for its reply. Close stops automatic extension but
// must not release the lease: interrupting the heartbeat would close its
// connection and free the lock. The server's replies are dropped until
// after Close has begun, so the heartbeat is in flight; while Close waits,
// the key stays held, and once the reply arrives the lease is still held
// and Close returns (within the request timeout).
func TestCloseDuringHeartbeat(t *testing.T) {
	s := startPostgres(t)
	ctx := context.Background()
	holder, link := s.packetLocker(t, "holder", nil)
	other := s.locker(t, "other", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, holder, key, distlock.WithAutoExtend(time.Hour))
	defer func() { _ = ls.Release(ctx) }()
	pid := s.holderPID(t, key)
	before := queryStart(t, s, pid)
	mustFault(t, link.DropReplies)
	eventually(t, distlock.DefaultTTL, "the watchdog sent no heartbeat", func() bool { return queryStart(t, s, pid).After(before) })

	closed := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(closed)
		_ = holder.Close()
	}()
	time.Sleep(500 * time.Millisecond) // Close has stopped the watchdog, whose heartbeat waits
	_, err := other.TryAcquire(ctx, key)
	wantErr(t, err, distlock.ErrNotAcquired)
	if err := ls.Err(); err != nil {
		t.Fatalf("Close ended the lease during its heartbeat: %v", err)
	}
	mustFault(t, link.Heal) // the server's retransmitted reply arrives
	select {
	case <-closed:
		t.Logf("Close returned after %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(3 * pgadvisory.DefaultRequestTimeout):
		t.Fatalf("Close has not returned %v after it began", 3*pgadvisory.DefaultRequestTimeout)
	}
	if err := ls.Err(); err != nil {
		t.Fatalf("the lease was lost across Close: %v", err)
	}
	_, err = other.TryAcquire(ctx, key)
	wantErr(t, err, distlock.ErrNotAcquired)
	mustRelease(t, ls)
	mustRelease(t, mustAcquire(t, other, key))
}

// TestCloseRacingAGrant: Close begins just as a blocking Acquire's lock
// statement returns granted. Close interrupts waiting connections with a
// past deadline, which such a grant would carry into its lease (failing
// its first Extend or Release). The Acquire must instead return
// ErrClosed, with the lock freed, and Close must return.
func TestCloseRacingAGrant(t *testing.T) {
	s := startPostgres(t)
	l := s.locker(t, "closing", nil)
	key := uniqueKey(t)
	closed := make(chan error, 1)
	var once sync.Once
	pgadvisory.SetHookAfterWait(t, func() {
		once.Do(func() {
			go func() { closed <- l.Close() }()
			for deadline := time.Now().Add(10 * time.Second); !pgadvisory.Closing(l); {
				if time.Now().After(deadline) {
					t.Error("Close never began")
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ls, err := l.Acquire(ctx, key)
	if err == nil {
		_ = ls.Release(context.Background())
		t.Fatal("Acquire granted a lease while its Locker was closing (its connection carries Close's past deadline)")
	}
	if !errors.Is(err, distlock.ErrClosed) {
		t.Fatalf("Acquire: %v; want ErrClosed", err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return")
	}
	// The grant was given back: another Locker takes the key at once.
	other := s.locker(t, "other", nil)
	got, err := other.TryAcquire(context.Background(), key)
	if err != nil {
		t.Fatalf("the racing grant was not freed: %v", err)
	}
	_ = got.Release(context.Background())
}

// TestCloseDuringSweep: Close while the pool's sweep is resetting the idle
// timeout of a connection whose server does not answer (black-holed).
// Close interrupts the reset and waits at most closeTimeout (1 s) for the
// interrupted connection's clean-up, not for the server.
func TestCloseDuringSweep(t *testing.T) {
	s := startPostgres(t)
	l := s.locker(t, "a", nil)
	key := uniqueKey(t)
	resets := pgadvisory.SweepResets(t)
	// TTL 4 s: the sweep resets after 2 s idle, the server would end the
	// session at 4 s (which would also end the reset).
	mustRelease(t, mustAcquire(t, l, key, distlock.WithTTL(4*time.Second)))
	link := s.node.Link("a")
	link.Blackhole()
	defer link.Heal()
	select {
	case <-resets:
	case <-time.After(10 * time.Second):
		t.Fatal("the sweep never reset the idle connection")
	}
	start := time.Now()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	took := time.Since(start)
	t.Logf("Close took %v", took)
	if took > 1500*time.Millisecond {
		t.Fatalf("Close took %v with a sweep's reset unanswered", took)
	}
}

// closeBound bounds Close with a request in flight: it ends the request at
// once, then closes its connection (at most about 2 s on a cut link), well
// before the request timeout would have ended it.
const closeBound = 3 * time.Second

// closeDuring starts call, closes l once call is under way, and returns
// call's error. Close itself must return within closeBound.
func closeDuring(t *testing.T, l *pgadvisory.Locker, call func() error) error {
	t.Helper()
	res := make(chan error, 1)
	go func() { res <- call() }()
	time.Sleep(300 * time.Millisecond) // the call's request is in flight
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = l.Close()
	}()
	select {
	case <-closed:
		t.Logf("Close returned after %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(closeBound):
		t.Errorf("Close has not returned %v after it was called, with a call in flight", closeBound)
		<-closed
	}
	return <-res
}
