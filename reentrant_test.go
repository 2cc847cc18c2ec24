package distlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
)

// counting is a Locker that counts the acquisitions reaching its backend.
type counting struct {
	distlock.Locker
	calls atomic.Int64
}

func (c *counting) Acquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	c.calls.Add(1)
	return c.Locker.Acquire(ctx, key, opts...)
}

func (c *counting) TryAcquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	c.calls.Add(1)
	return c.Locker.TryAcquire(ctx, key, opts...)
}

// TestReentrantNesting holds a key three deep for one owner: one backend
// acquisition, every handle on the same lease, inner releases keep the key
// and the outermost frees it.
func TestReentrantNesting(t *testing.T) {
	mem := newMem(t)
	backend := &counting{Locker: mem}
	r := distlock.Reentrant(backend)
	key := locktest.UniqueKey(t)
	ctx := distlock.WithOwner(context.Background(), "job-1")

	outer, _ := r.Acquire(ctx, key, distlock.WithTTL(time.Second))
	mid, _ := r.Acquire(ctx, key)
	inner, err := r.TryAcquire(ctx, key)
	if err != nil || outer == nil || mid == nil {
		t.Fatalf("nested acquisitions: %v", err)
	}
	if n := backend.calls.Load(); n != 1 {
		t.Fatalf("backend saw %d acquisitions, want 1 (the outermost)", n)
	}
	for _, h := range []distlock.Lease{mid, inner} {
		if h.Fence() != outer.Fence() || h.Token() != outer.Token() || h.Done() != outer.Done() || h.Key() != key {
			t.Fatal("inner handle does not share the lease")
		}
	}
	before := outer.ValidUntil()
	if err := inner.Extend(ctx, time.Minute); err != nil || !mid.ValidUntil().After(before.Add(30*time.Second)) {
		t.Fatalf("Extend on the inner handle: %v, ValidUntil %v -> %v", err, before, mid.ValidUntil())
	}
	locktest.MustRelease(t, inner)
	locktest.MustRelease(t, inner) // idempotent: still one hold less
	mustBeHeld(t, mem, key)
	locktest.MustRelease(t, mid)
	mustBeHeld(t, mem, key)
	locktest.ReleaseTwice(t, outer)
	mustBeFree(t, mem, key)
}

// TestReentrantOwnersContend checks that two owners exclude each other and
// that a Locker without owner waits on a key it holds itself.
func TestReentrantOwnersContend(t *testing.T) {
	mem := newMem(t)
	r := distlock.Reentrant(mem)
	key := locktest.UniqueKey(t)
	a := distlock.WithOwner(context.Background(), "a")
	b := distlock.WithOwner(context.Background(), "b")

	held, err := r.Acquire(a, key)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.TryAcquire(b, key)
	locktest.WantErr(t, err, distlock.ErrNotAcquired)
	wctx, cancel := context.WithTimeout(b, 30*time.Millisecond)
	defer cancel()
	_, err = r.Acquire(wctx, key)
	locktest.WantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
	got := make(chan distlock.Lease, 1)
	go func() {
		ls, err := r.Acquire(b, key)
		if err != nil {
			t.Errorf("owner b: %v", err)
		}
		got <- ls
	}()
	time.Sleep(20 * time.Millisecond)
	locktest.MustRelease(t, held)
	ls := <-got
	if ls == nil || ls.Fence() <= held.Fence() {
		t.Fatalf("owner b's lease %v after a's", ls)
	}
	locktest.MustRelease(t, ls)
}

// TestReentrantNoOwner checks that calls without an owner pass through:
// a second acquisition of a held key from the same Locker is a contender.
func TestReentrantNoOwner(t *testing.T) {
	mem := newMem(t)
	r := distlock.Reentrant(mem)
	key := locktest.UniqueKey(t)
	held := locktest.MustAcquire(t, r, key)
	_, err := r.TryAcquire(context.Background(), key)
	locktest.WantErr(t, err, distlock.ErrNotAcquired)
	locktest.MustRelease(t, held)
	mustBeFree(t, r, key)
	if r.Guarantees() != mem.Guarantees() {
		t.Fatal("Guarantees are not the backend's")
	}
}

// TestReentrantLost checks that once the lease is lost the owner's next
// acquisition takes a new lease, and that the old handles report the loss.
func TestReentrantLost(t *testing.T) {
	mem := newMem(t)
	r := distlock.Reentrant(mem)
	key := locktest.UniqueKey(t)
	ctx := distlock.WithOwner(context.Background(), 7)
	outer, _ := r.Acquire(ctx, key)
	inner, _ := r.Acquire(ctx, key)
	if !mem.Revoke(key) {
		t.Fatal("Revoke found no holder")
	}
	<-outer.Done()
	again, err := r.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if again.Err() != nil || again.Fence() <= outer.Fence() {
		t.Fatalf("handed out a dead or old lease: fence %d after %d, Err %v", again.Fence(), outer.Fence(), again.Err())
	}
	locktest.WantErr(t, inner.Release(ctx), distlock.ErrLeaseLost)
	locktest.WantErr(t, outer.Release(ctx), distlock.ErrLeaseLost)
	mustBeHeld(t, mem, key) // the old handles leave the new lease alone
	locktest.MustRelease(t, again)
	mustBeFree(t, mem, key)
}

// TestReentrantInvalid checks that a nil or non-comparable owner, an empty
// key and a bad option fail with ErrInvalidArgument, without a panic.
func TestReentrantInvalid(t *testing.T) {
	r := distlock.Reentrant(newMem(t))
	bg := context.Background()
	for name, owner := range map[string]any{
		"nil": nil, "slice": []int{1}, "map": map[string]int{}, "func in struct": struct{ f any }{func() {}},
	} {
		_, err := r.Acquire(distlock.WithOwner(bg, owner), "k")
		locktest.WantErr(t, err, distlock.ErrInvalidArgument)
		_, err = r.TryAcquire(distlock.WithOwner(bg, owner), "k")
		if !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Errorf("%s: %v", name, err)
		}
	}
	ctx := distlock.WithOwner(bg, "o")
	_, err := r.Acquire(ctx, "")
	locktest.WantErr(t, err, distlock.ErrInvalidArgument)
	held := locktest.MustAcquire(t, r, "k")
	_, err = r.Acquire(ctx, "k", distlock.WithTTL(-1))
	locktest.WantErr(t, err, distlock.ErrInvalidArgument)
	locktest.MustRelease(t, held)

	ended, cancel := context.WithCancel(ctx)
	cancel()
	_, err = r.TryAcquire(ended, "k")
	locktest.WantErr(t, err, distlock.ErrNotAcquired, context.Canceled)

	nilR := distlock.Reentrant(nil)
	_, err = nilR.Acquire(bg, "k")
	locktest.WantErr(t, err, distlock.ErrInvalidArgument)
	if nilR.Close() != nil || nilR.Guarantees() != (distlock.Guarantees{}) {
		t.Fatal("Reentrant(nil): Close or Guarantees")
	}
}

// TestReentrantConcurrent runs goroutines of several owners, several per
// owner, nesting on a few keys: at every moment the handles alive on a key
// belong to one owner (run with -race).
func TestReentrantConcurrent(t *testing.T) {
	r := distlock.Reentrant(newMem(t))
	type state struct {
		mu       sync.Mutex
		owner, n int
	}
	keys := make([]state, 3)
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Go(func() {
			owner := g%4 + 1
			ctx := distlock.WithOwner(context.Background(), owner)
			for i := range 50 {
				k := (g + i) % len(keys)
				key := fmt.Sprintf("%s.%d", t.Name(), k)
				var hs []distlock.Lease
				for range 1 + i%3 {
					ls, err := r.Acquire(ctx, key, distlock.WithTTL(10*time.Second))
					if err != nil {
						t.Errorf("owner %d: %v", owner, err)
						return
					}
					hs = append(hs, ls)
					s := &keys[k]
					s.mu.Lock()
					if s.n > 0 && s.owner != owner {
						t.Errorf("key %d: owner %d holds while owner %d does", k, owner, s.owner)
					}
					s.owner, s.n = owner, s.n+1
					s.mu.Unlock()
				}
				for j := len(hs) - 1; j >= 0; j-- {
					s := &keys[k]
					s.mu.Lock()
					s.n--
					s.mu.Unlock()
					if err := hs[j].Release(context.Background()); err != nil {
						t.Errorf("owner %d: Release: %v", owner, err)
					}
				}
			}
		})
	}
	wg.Wait()
}
