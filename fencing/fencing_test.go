package fencing_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/distlock/distlock/fencing"
)

// TestRegisterRejectsLowerFence checks that a Register accepts the same
// fence again and higher ones, and refuses a lower fence's Write and Update
// with a *StaleFenceError, leaving the value unchanged.
func TestRegisterRejectsLowerFence(t *testing.T) {
	var r fencing.Register[string]
	if err := r.Write(5, "a"); err != nil {
		t.Fatal(err)
	}
	if err := r.Write(5, "a2"); err != nil {
		t.Fatalf("same fence rewrite rejected: %v", err)
	}
	err := r.Write(4, "stale")
	var se *fencing.StaleFenceError
	if !errors.Is(err, fencing.ErrStaleFence) || !errors.As(err, &se) || se.Fence != 4 || se.Highest != 5 {
		t.Fatalf("stale write: got %v", err)
	}
	if v, h := r.Read(); v != "a2" || h != 5 {
		t.Fatalf("stale write changed the register: %q %d", v, h)
	}
	if err := r.Write(9, "b"); err != nil {
		t.Fatal(err)
	}
	if err := r.Update(6, func(s string) string { return s + "!" }); !errors.Is(err, fencing.ErrStaleFence) {
		t.Fatalf("stale update accepted: %v", err)
	}
	if v, _ := r.Read(); v != "b" {
		t.Fatalf("value %q", v)
	}
}

// TestGuardPerKeyConcurrent checks that under concurrent Admit calls on
// three keys each key's Highest is the highest fence admitted for it, and
// that a lower fence is refused afterwards.
func TestGuardPerKeyConcurrent(t *testing.T) {
	var g fencing.Guard
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := map[string][]uint64{}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := uint64(1); i <= 200; i++ {
				key := fmt.Sprint("k", i%3)
				f := i*8 + uint64(w)
				if g.Admit(key, f) == nil {
					mu.Lock()
					accepted[key] = append(accepted[key], f)
					mu.Unlock()
				}
			}
		}(w)
	}
	wg.Wait()
	for key, fs := range accepted {
		// The order of the recorded fences is not Admit's order (they are
		// recorded after Admit returns), so only the final highest is checked.
		var highest uint64
		for _, f := range fs {
			highest = max(highest, f)
		}
		if g.Highest(key) != highest {
			t.Fatalf("key %s highest %d, max accepted %d", key, g.Highest(key), highest)
		}
	}
	if err := g.Admit("k0", 1); !errors.Is(err, fencing.ErrStaleFence) {
		t.Fatalf("stale admit: %v", err)
	}
}

// TestFenceZeroIsAlwaysRejected checks that a Register or Guard that has
// accepted nothing yet still refuses fence 0: no Lease issues it, and it
// is what an unset fence reads as.
func TestFenceZeroIsAlwaysRejected(t *testing.T) {
	var r fencing.Register[int]
	if err := r.Write(0, 1); !errors.Is(err, fencing.ErrStaleFence) {
		t.Fatalf("register write: %v", err)
	}
	if err := r.Update(0, func(int) int { return 1 }); !errors.Is(err, fencing.ErrStaleFence) {
		t.Fatalf("register update: %v", err)
	}
	var g fencing.Guard
	if err := g.Admit("k", 0); !errors.Is(err, fencing.ErrStaleFence) {
		t.Fatalf("guard: %v", err)
	}
}
