package migrate_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/fencing"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/migrate"
)

// TestFenceCurrentHolderNeverRejected: in adjacent fleets on the forward
// roll, the pair register never refuses the write of a current holder.
func TestFenceCurrentHolderNeverRejected(t *testing.T) {
	for _, pq := range [][2]migrate.Phase{{migrate.PhaseFrom, migrate.PhaseShadow}, {migrate.PhaseShadow, migrate.PhaseBoth}, {migrate.PhaseBoth, migrate.PhaseTo}} {
		t.Run(fmt.Sprintf("%v-%v", pq[0], pq[1]), func(t *testing.T) {
			f := newFleet(t)
			key := locktest.UniqueKey(t)
			var reg fencing.PairRegister[int]
			var rejectedCurrent, accepted, stale atomic.Int64
			var wg sync.WaitGroup
			for i := range 6 {
				l := f.client(pq[i%2])
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 60 {
						ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
						ls, err := l.Acquire(ctx, key, distlock.WithTTL(15*time.Millisecond), distlock.WithRetryDelay(time.Millisecond, 3*time.Millisecond))
						cancel()
						if err != nil {
							continue
						}
						fp, _ := migrate.Fences(ls)
						if fp == (fencing.Pair{}) {
							t.Errorf("zero pair issued")
						}
						for range 3 {
							if rand.IntN(5) == 0 {
								time.Sleep(20 * time.Millisecond)
							}
							err := reg.Update(fp, func(v int) int { return v + 1 })
							valid := time.Now().Before(ls.ValidUntil()) && ls.Err() == nil
							switch {
							case err == nil:
								accepted.Add(1)
							case valid:
								rejectedCurrent.Add(1)
								t.Errorf("current holder %v rejected: %v", fp, err)
							default:
								stale.Add(1)
							}
						}
						_ = ls.Release(context.Background())
					}
				}()
			}
			wg.Wait()
			t.Logf("accepted %d stale-rejected %d current-rejected %d", accepted.Load(), stale.Load(), rejectedCurrent.Load())
		})
	}
}
