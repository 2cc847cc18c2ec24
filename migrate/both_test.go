package migrate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/migrate"
)

// TestBothLostOnEitherSide: when either backend's lease is lost, Done
// fires, Err matches ErrLeaseLost, and the other backend's lock is
// released at once (not left until its TTL).
func TestBothLostOnEitherSide(t *testing.T) {
	for _, side := range []string{"old", "new"} {
		t.Run(side, func(t *testing.T) {
			f := newFleet(t)
			key := locktest.UniqueKey(t)
			ls := locktest.MustAcquire(t, f.client(migrate.PhaseBoth), key, distlock.WithTTL(time.Minute))
			lost, other := f.from, f.to
			if side == "new" {
				lost, other = f.to, f.from
			}
			if !lost.Revoke(key) {
				t.Fatal("Revoke found no holder")
			}
			select {
			case <-ls.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("Done did not fire after one side was lost")
			}
			locktest.WantErr(t, ls.Err(), distlock.ErrLeaseLost)
			locktest.Eventually(t, 5*time.Second, "the other side released", func() bool { return !heldOn(t, other, key) })
			locktest.WantErr(t, ls.Release(t.Context()), distlock.ErrLeaseLost)
			locktest.WantErr(t, ls.Err(), distlock.ErrLeaseLost)
		})
	}
}

// TestBothReleasedOnce: the released-lease contract, and the validity is
// the earlier of the two sides'.
func TestBothReleasedOnce(t *testing.T) {
	f := newFleet(t)
	ls := locktest.MustAcquire(t, f.client(migrate.PhaseBoth), locktest.UniqueKey(t))
	if until := time.Until(ls.ValidUntil()); until <= 0 || until > distlock.DefaultTTL {
		t.Errorf("ValidUntil is %v from now, want within (0, %v]", until, distlock.DefaultTTL)
	}
	locktest.ReleaseTwice(t, ls)
}

// TestBothExtend: Extend moves both sides' validity; a side lost before
// the extension makes it fail with ErrLeaseLost and ends the lease.
func TestBothExtend(t *testing.T) {
	f := newFleet(t)
	key := locktest.UniqueKey(t)
	ls := locktest.MustAcquire(t, f.client(migrate.PhaseBoth), key, distlock.WithTTL(time.Second))
	if err := ls.Extend(t.Context(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if until := time.Until(ls.ValidUntil()); until < 30*time.Second {
		t.Fatalf("after Extend(1m) the lease is valid for %v only", until)
	}
	locktest.WantErr(t, ls.Extend(t.Context(), 0), distlock.ErrInvalidArgument)
	f.to.Revoke(key)
	locktest.WantErr(t, ls.Extend(t.Context(), time.Minute), distlock.ErrLeaseLost)
	select {
	case <-ls.Done():
	default:
		t.Fatal("Done still open after Extend reported the lease lost")
	}
	locktest.Eventually(t, 5*time.Second, "the old side released", func() bool { return !heldOn(t, f.from, key) })
}

// TestBothSecondRefusedReleasesFirst: when the new backend's lock is held
// elsewhere, TryAcquire fails and leaves the old backend's lock free.
func TestBothSecondRefusedReleasesFirst(t *testing.T) {
	f := newFleet(t)
	key := locktest.UniqueKey(t)
	other := locktest.MustAcquire(t, f.to, key)
	defer locktest.MustRelease(t, other)
	_, err := f.client(migrate.PhaseBoth).TryAcquire(t.Context(), key)
	locktest.WantErr(t, err, distlock.ErrNotAcquired)
	if heldOn(t, f.from, key) {
		t.Fatal("the old backend's lock stayed held after the new one refused")
	}
}

// TestBothWaitIsBoundedByFirstValidity: a PhaseBoth waiter holds the old
// backend's lock while it waits for the new one's only as long as that
// lock was valid when the wait began, even when it is extended
// automatically; then it lets go (another client can take the old lock)
// and tries again, and gets both once the new lock is free.
func TestBothWaitIsBoundedByFirstValidity(t *testing.T) {
	f := newFleet(t)
	key := locktest.UniqueKey(t)
	blocker := locktest.MustAcquire(t, f.to, key)
	const ttl = 300 * time.Millisecond
	res := make(chan error, 1)
	go func() {
		ls, err := f.client(migrate.PhaseBoth).Acquire(t.Context(), key, distlock.WithTTL(ttl), distlock.WithAutoExtend(0))
		if err == nil {
			err = ls.Release(t.Context())
		}
		res <- err
	}()
	locktest.Eventually(t, 5*time.Second, "the waiter holds the old lock", func() bool { return heldOn(t, f.from, key) })
	ctx, cancel := context.WithTimeout(t.Context(), 10*ttl)
	defer cancel()
	competitor, err := f.from.Acquire(ctx, key, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatalf("the waiter kept the old lock while the new one stayed busy: %v", err)
	}
	locktest.MustRelease(t, competitor)
	locktest.MustRelease(t, blocker)
	select {
	case err := <-res:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not get both locks after the new one was freed")
	}
}

// TestBothAcquireCancelled: a waiter whose context ends returns
// ErrNotAcquired with the context's error and holds nothing.
func TestBothAcquireCancelled(t *testing.T) {
	f := newFleet(t)
	key := locktest.UniqueKey(t)
	blocker := locktest.MustAcquire(t, f.to, key)
	defer locktest.MustRelease(t, blocker)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := f.client(migrate.PhaseBoth).Acquire(ctx, key)
	locktest.WantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
	if errors.Is(err, distlock.ErrInvalidArgument) || heldOn(t, f.from, key) {
		t.Fatalf("a cancelled waiter left the old lock held (or failed oddly: %v)", err)
	}
}

// TestBothStatsMeasureTheWait: BothStats counts the waits, the restarts,
// and how long the old lock was held while waiting; the longest is
// bounded by the old lease's validity (plus scheduling slack).
func TestBothStatsMeasureTheWait(t *testing.T) {
	f := newFleet(t)
	key := locktest.UniqueKey(t)
	blocker := locktest.MustAcquire(t, f.to, key)
	l := f.client(migrate.PhaseBoth)
	const ttl = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), 5*ttl)
	defer cancel()
	_, err := l.Acquire(ctx, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(0))
	locktest.WantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
	locktest.MustRelease(t, blocker)
	s := l.BothStats()
	if s.Waits < 2 || s.Restarts < 1 || s.HeldWhileWaiting <= 0 {
		t.Fatalf("stats %+v: want several waits and restarts over 5 TTLs", s)
	}
	if s.MaxHeldWhileWaiting > ttl+time.Second {
		t.Fatalf("the old lock was held %v while waiting, its TTL is %v", s.MaxHeldWhileWaiting, ttl)
	}
	if got := f.client(migrate.PhaseFrom).BothStats(); got != (migrate.BothStats{}) {
		t.Fatalf("a from-phase Locker has both stats %+v", got)
	}
}
