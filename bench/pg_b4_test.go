package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/pgadvisory"
)

// BenchmarkPGB4ManyKeys: k workers, each on its own key, acquire+release
// in a loop for a fixed time: ours (one Locker shared by all workers, a
// pinned connection per lease) against raw pg_advisory_lock +
// pg_advisory_unlock with one pgx connection per worker, and the same raw
// pair drawing a durable fence from our sequence (raw+nextval: what the
// fence alone costs under concurrency). Rotates the three over 4 rounds;
// reports the median acquisitions/s of each, ours/raw and
// ours/raw+nextval.
// Run with -benchtime=1x.
func BenchmarkPGB4ManyKeys(b *testing.B) {
	s := startPG(b)
	const k = 8
	const span = 2 * time.Second
	ours := s.locker(b, nil)
	raws, fenced := make([]contender, k), make([]contender, k)
	for i := range raws {
		raws[i] = pgRawContender{c: s.rawConn(b)}
		fenced[i] = pgRawContender{c: s.rawConn(b), fence: true}
	}
	run := func(impl string) float64 {
		ctx, cancel := context.WithTimeout(context.Background(), span)
		defer cancel()
		var mu sync.Mutex
		total := 0
		var wg sync.WaitGroup
		for w := 0; w < k; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := fmt.Sprintf("pgb4:%s:%d", impl, w)
				n := 0
				for ctx.Err() == nil {
					var release func(context.Context) error
					var err error
					if impl == "ours" {
						var ls interface{ Release(context.Context) error }
						ls, err = ours.TryAcquire(context.Background(), key)
						if err == nil {
							release = ls.Release
						}
					} else if impl == "raw" {
						release, err = raws[w].acquire(context.Background(), key)
					} else {
						release, err = fenced[w].acquire(context.Background(), key)
					}
					if err != nil {
						b.Errorf("%s: %v", impl, err)
						return
					}
					if err := release(context.Background()); err != nil {
						b.Errorf("%s release: %v", impl, err)
						return
					}
					n++
				}
				mu.Lock()
				total += n
				mu.Unlock()
			}()
		}
		wg.Wait()
		return float64(total) / span.Seconds()
	}
	impls := []string{"ours", "raw", "raw+nextval"}
	for _, impl := range impls { // warm up
		run(impl)
	}
	rates := map[string][]float64{}
	b.ResetTimer()
	for range b.N {
		for r := 0; r < 4; r++ {
			for i := range impls {
				impl := impls[(i+r)%len(impls)]
				rates[impl] = append(rates[impl], run(impl))
			}
		}
	}
	b.StopTimer()
	o, r, rf := median(rates["ours"]), median(rates["raw"]), median(rates["raw+nextval"])
	b.ReportMetric(o, "ours-acq/s")
	b.ReportMetric(r, "raw-acq/s")
	b.ReportMetric(rf, "raw+nextval-acq/s")
	b.ReportMetric(o/r, "ours/raw")
	b.ReportMetric(o/rf, "ours/raw+nextval")
	b.Logf("rounds: ours %v, raw %v, raw+nextval %v", rates["ours"], rates["raw"], rates["raw+nextval"])
	_ = pgadvisory.DefaultNamespace
}
