package multilock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/multilock"
)

// stress is a run of clients taking random overlapping sets of a pool of
// keys, each set passed in a random order. Inside a section each key's
// in-use counter must go from 0 to 1 and its fence must exceed the last
// holder's (where the backend's fences are monotonic).
type stress struct {
	pool     []string
	wait     bool // Acquire; TryAcquire otherwise
	inUse    map[string]*atomic.Int32
	fences   map[string]*uint64 // last fence seen; written only by the key's holder
	monotone bool

	overlaps, deadlocks, taken, refused atomic.Int64
	mu                                  sync.Mutex
	errs                                []error // unexpected errors; guarded by mu
}

func newStress(pool []string, wait, monotone bool) *stress {
	s := &stress{pool: pool, wait: wait, monotone: monotone,
		inUse: map[string]*atomic.Int32{}, fences: map[string]*uint64{}}
	for _, k := range pool {
		s.inUse[k], s.fences[k] = new(atomic.Int32), new(uint64)
	}
	return s
}

// run runs one client per Locker for rounds rounds each, all bounded by
// deadline: an Acquire still waiting then counts as a deadlock.
func (s *stress) run(t *testing.T, lockers []distlock.Locker, rounds int, deadline time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var wg sync.WaitGroup
	for i, l := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 19))
			for range rounds {
				if !s.round(ctx, l, rng) {
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d clients x %d rounds: %d sets taken, %d refused, %d overlaps, %d deadlocks",
		len(lockers), rounds, s.taken.Load(), s.refused.Load(), s.overlaps.Load(), s.deadlocks.Load())
	for _, err := range s.errs {
		t.Error(err)
	}
	if n := s.overlaps.Load(); n > 0 {
		t.Errorf("%d overlaps: two holders of one key", n)
	}
	if n := s.deadlocks.Load(); n > 0 {
		t.Errorf("%d clients still waiting after %v: deadlock", n, deadline)
	}
}

// round takes one random set, checks exclusion inside, and releases it;
// false when the client must stop.
func (s *stress) round(ctx context.Context, l distlock.Locker, rng *rand.Rand) bool {
	keys := append([]string(nil), s.pool...)
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	keys = keys[:1+rng.IntN(min(5, len(keys)))]
	take := multilock.TryAcquire
	if s.wait {
		take = multilock.Acquire
	}
	ml, err := take(ctx, l, keys)
	switch {
	case s.wait && errors.Is(err, context.DeadlineExceeded):
		s.deadlocks.Add(1)
		return false
	case !s.wait && errors.Is(err, distlock.ErrNotAcquired) && ctx.Err() == nil:
		s.refused.Add(1)
		return true
	case err != nil:
		s.fail(fmt.Errorf("taking %v: %w", keys, err))
		return false
	}
	s.taken.Add(1)
	s.section(ml, rng)
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ml.Release(rctx); err != nil {
		s.fail(fmt.Errorf("releasing %v: %w", keys, err))
		return false
	}
	return true
}

// section marks every key in use, checks that no one else had it and
// that its fence moved forward, works briefly, and unmarks.
func (s *stress) section(ml *multilock.Lease, rng *rand.Rand) {
	fences := ml.Fences()
	for _, k := range ml.Keys() {
		if s.inUse[k].Add(1) != 1 {
			s.overlaps.Add(1)
		}
		if last := s.fences[k]; s.monotone && fences[k] <= *last {
			s.fail(fmt.Errorf("key %s: fence %d after %d", k, fences[k], *last))
		}
		*s.fences[k] = fences[k]
	}
	time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
	if err := ml.Err(); err != nil {
		s.fail(fmt.Errorf("lease %s ended inside the section: %w", ml.Key(), err))
	}
	for _, k := range ml.Keys() {
		s.inUse[k].Add(-1)
	}
}

func (s *stress) fail(err error) {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
}

// handles returns n clients on mine's space.
func handles(t *testing.T, n int) []distlock.Locker {
	mine, _ := newMem(t)
	ls := []distlock.Locker{mine}
	for len(ls) < n {
		h := mine.NewHandle()
		t.Cleanup(func() { _ = h.Close() })
		ls = append(ls, h)
	}
	return ls
}

var pool = []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}

// TestDeadlockFreedom: 6 clients, 150 rounds each, random overlapping
// sets of up to 5 of 8 keys in random order, blocking Acquire: no
// deadlock within 60 s, no overlap, fences increasing per key.
func TestDeadlockFreedom(t *testing.T) {
	s := newStress(pool, true, true)
	s.run(t, handles(t, 6), 150, 60*time.Second)
	if s.taken.Load() != 6*150 {
		t.Errorf("%d sets taken, want %d", s.taken.Load(), 6*150)
	}
}

// TestContention: 6 clients racing TryAcquire over the same sets never
// overlap, and once they stop no key is left held.
func TestContention(t *testing.T) {
	ls := handles(t, 7)
	s := newStress(pool, false, true)
	s.run(t, ls[:6], 300, 60*time.Second)
	if s.refused.Load() == 0 {
		t.Log("no TryAcquire was refused: no contention this run")
	}
	wantFree(t, ls[6], pool...)
}
