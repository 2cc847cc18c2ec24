package migrate_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/fencing"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/migrate"
)

// TestSingleFenceIsUnsafeAcrossBothAndTo: the scripted case that makes
// fence pairs necessary. A PhaseTo holder's write is delayed past its
// lease; a PhaseBoth holder takes the key and writes. A resource checking
// Lease.Fence alone then accepts the earlier holder's late write (the two
// backends' fences are not comparable); one checking pairs refuses it.
func TestSingleFenceIsUnsafeAcrossBothAndTo(t *testing.T) {
	f := newFleet(t)
	key := locktest.UniqueKey(t)
	for range 5 { // the new backend's fences run ahead of the old one's
		locktest.MustRelease(t, locktest.MustAcquire(t, f.to, key))
	}
	early := locktest.MustAcquire(t, f.client(migrate.PhaseTo), key, distlock.WithTTL(50*time.Millisecond))
	<-early.Done() // expired: its holder was paused
	later := locktest.MustAcquire(t, f.client(migrate.PhaseBoth), key)
	defer locktest.MustRelease(t, later)

	var single fencing.Register[string]
	if err := single.Write(later.Fence(), "later"); err != nil {
		t.Fatal(err)
	}
	if err := single.Write(early.Fence(), "early"); err != nil {
		t.Fatalf("the single-fence register refused the late write (%v): the scripted case no longer shows the hazard", err)
	}

	var pairs fencing.PairRegister[string]
	lp, _ := migrate.Fences(later)
	ep, _ := migrate.Fences(early)
	if err := pairs.Write(lp, "later"); err != nil {
		t.Fatal(err)
	}
	if err := pairs.Write(ep, "early"); err == nil {
		t.Fatalf("the pair register accepted an earlier holder's late write (%v after %v)", ep, lp)
	}
}

// TestPairFencesOrderAdjacentFleets: clients in two adjacent phases
// contend on one key with short TTLs; some stall past their lease before
// writing. The pair register must never accept a write of an earlier
// holder after a later holder's: the order of holds is the order of the
// fences of the lock both phases share (memlock's fences strictly
// increase in grant order).
func TestPairFencesOrderAdjacentFleets(t *testing.T) {
	for i := range len(phases) - 1 {
		p, q := phases[i], phases[i+1]
		t.Run(fmt.Sprintf("%v-%v", p, q), func(t *testing.T) {
			common := func(fp fencing.Pair) uint64 { return fp.From }
			if p == migrate.PhaseBoth {
				common = func(fp fencing.Pair) uint64 { return fp.To }
			}
			checkFleetOrder(t, newFleet(t), []migrate.Phase{p, q, p, q}, common)
		})
	}
}

func checkFleetOrder(t *testing.T, f *fleet, ps []migrate.Phase, common func(fencing.Pair) uint64) {
	key := locktest.UniqueKey(t)
	var reg fencing.PairRegister[uint64] // the value is the common fence of the last accepted write
	var wg sync.WaitGroup
	var mu sync.Mutex
	var violations []string
	for _, ph := range ps {
		l := f.client(ph)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				ls, err := l.Acquire(t.Context(), key, distlock.WithTTL(20*time.Millisecond))
				if err != nil {
					t.Error(err)
					return
				}
				fp, _ := migrate.Fences(ls)
				c := common(fp)
				if rand.IntN(4) == 0 {
					time.Sleep(30 * time.Millisecond) // stalls past its lease
				}
				_ = reg.Update(fp, func(last uint64) uint64 {
					if c < last {
						mu.Lock()
						violations = append(violations, fmt.Sprintf("write of the holder with common fence %d accepted after %d", c, last))
						mu.Unlock()
					}
					return c
				})
				_ = ls.Release(t.Context())
			}
		}()
	}
	wg.Wait()
	if len(violations) > 0 {
		t.Fatalf("%d overtaking writes, first: %s", len(violations), violations[0])
	}
}
