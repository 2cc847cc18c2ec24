package migrate_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/migrate"
)

// Shadow: release right after acquire, racing the mirror; after Close (which
// joins background work) no mirror is left on the new backend, and stats add up.
func TestShadowReleaseRace(t *testing.T) {
	f := newFleet(t)
	var evs atomic.Int64
	l := f.clientOpts(migrate.Options{Phase: migrate.PhaseShadow, OnShadow: func(migrate.ShadowEvent) { evs.Add(1) }})
	const n = 2000
	keys := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		keys[i] = locktest.UniqueKey(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ls, err := l.Acquire(context.Background(), keys[i], distlock.WithTTL(time.Minute), distlock.WithAutoExtend(0))
			if err != nil {
				t.Error(err)
				return
			}
			if rand.IntN(2) == 0 {
				time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
			}
			if rand.IntN(3) == 0 {
				_ = ls.Extend(context.Background(), time.Minute)
			}
			if err := ls.Release(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	locktest.Eventually(t, 10*time.Second, "background settles", func() bool {
		s := l.ShadowStats()
		return s.Acquired+s.Abandoned+s.Failed+s.Contended == n && s.Released+s.Lost+s.Errors >= s.Acquired
	})
	time.Sleep(200 * time.Millisecond)
	s := l.ShadowStats()
	t.Logf("stats %+v events %d", s, evs.Load())
	held := 0
	for _, k := range keys {
		if heldOn(t, f.to, k) {
			held++
		}
	}
	if held > 0 {
		t.Fatalf("%d mirrors left held after all holders released", held)
	}
	if s.Errors > 0 || s.Lost > 0 {
		t.Errorf("misclassified outcomes: %+v", s)
	}
}

// PhaseBoth under contention with random ctx cancellations and a PhaseTo and
// PhaseShadow competitor: nothing left held afterwards; no overlap in adjacent phases.
func TestBothCancelStress(t *testing.T) {
	for _, other := range []migrate.Phase{migrate.PhaseShadow, migrate.PhaseTo} {
		t.Run(other.String(), func(t *testing.T) {
			f := newFleet(t)
			key := locktest.UniqueKey(t)
			var inside holders
			var wg sync.WaitGroup
			for _, ph := range []migrate.Phase{migrate.PhaseBoth, migrate.PhaseBoth, other, other} {
				l := f.client(ph)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 150 {
						ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(3000))*time.Microsecond)
						ls, err := l.Acquire(ctx, key, distlock.WithTTL(15*time.Millisecond))
						cancel()
						if err != nil {
							if !errors.Is(err, distlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
								t.Errorf("%v: unexpected error %v", ph, err)
							}
							continue
						}
						inside.enter(t, ls)
						time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
						inside.leave(ls)
						_ = ls.Release(context.Background())
					}
				}()
			}
			wg.Wait()
			time.Sleep(50 * time.Millisecond)
			if heldOn(t, f.from, key) || heldOn(t, f.to, key) {
				t.Fatal("a lock left held")
			}
		})
	}
}

// holders is the set of leases inside their sections.
type holders struct {
	mu sync.Mutex
	in map[distlock.Lease]bool
}

// enter fails t if another lease inside is still valid: a holder whose
// lease expired (it stalled past its short TTL) overlaps legitimately.
func (h *holders) enter(t *testing.T, ls distlock.Lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	for o := range h.in {
		if now.Before(o.ValidUntil()) && now.Before(ls.ValidUntil()) {
			t.Errorf("two valid holders at once")
		}
	}
	if h.in == nil {
		h.in = map[distlock.Lease]bool{}
	}
	h.in[ls] = true
}

func (h *holders) leave(ls distlock.Lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.in, ls)
}

// Both: Close while waiting for the new lock, with an old backend whose
// leases cannot be released once it is closed (as a URL-opened redis client).
type closingBackend struct {
	distlock.Locker
	closed atomic.Bool
}

func (c *closingBackend) Close() error { c.closed.Store(true); return c.Locker.Close() }
func (c *closingBackend) Acquire(ctx context.Context, k string, o ...distlock.Option) (distlock.Lease, error) {
	ls, err := c.Locker.Acquire(ctx, k, o...)
	if err != nil {
		return nil, err
	}
	return &closingLease{ls, c}, nil
}

type closingLease struct {
	distlock.Lease
	c *closingBackend
}

func (l *closingLease) Release(ctx context.Context) error {
	if l.c.closed.Load() {
		return distlock.ErrClosed
	}
	return l.Lease.Release(ctx)
}

// TestCloseDuringBothWaitLeavesOldHeld: Close during a both wait leaves
// no lock held on the old backend: the backends close only after the
// waiter has cleaned up.
func TestCloseDuringBothWaitLeavesOldHeld(t *testing.T) {
	f := newFleet(t)
	key := locktest.UniqueKey(t)
	busy := locktest.MustAcquire(t, f.to, key)
	defer locktest.MustRelease(t, busy)
	from := &closingBackend{Locker: f.from.NewHandle()}
	l, err := migrate.New(from, f.to.NewHandle(), migrate.Options{Phase: migrate.PhaseBoth})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { _, err := l.Acquire(context.Background(), key, distlock.WithTTL(5*time.Second)); errc <- err }()
	time.Sleep(100 * time.Millisecond)
	_ = l.Close()
	t.Logf("Acquire: %v", <-errc)
	if heldOn(t, f.from, key) {
		t.Fatal("failed acquisition left the old lock held (until its TTL) after Close")
	}
}
