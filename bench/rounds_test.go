package bench

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// throughputRounds is how many rounds of each implementation a throughput
// benchmark (B3, B4) runs per k, alternating, before it takes medians.
const throughputRounds = 3

// throughputCase is one throughput benchmark over two implementations,
// and any controls.
type throughputCase struct {
	impls []string // "ours" first, then the peer, then controls (a floor)
	ks    []int
	// contenders returns k warmed-up contenders of impl.
	contenders func(b *testing.B, impl string, k int) []contender
	// key returns worker w's key in one round (fresh names every round).
	key func(impl string, k, round, w int) string
	// run is how long each round runs (rlThroughputDur).
	run time.Duration
}

// runThroughput runs, for each k, throughputRounds rounds of every
// implementation, the order rotating each round so that the machine's
// slow phases hit them all alike (alternate, repeat, take medians). Each k is one sub-benchmark that reports the median
// acquisitions/s of each implementation, ours/peer of the medians, the
// failures of all rounds, and each implementation's fairness: the fewest
// over the most acquisitions of one worker, summed over the rounds. For a
// control c it also reports c/peer and ours/c.
func runThroughput(b *testing.B, tc throughputCase) {
	for _, k := range tc.ks {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			cs := map[string][]contender{}
			for _, impl := range tc.impls {
				cs[impl] = tc.contenders(b, impl, k)
			}
			rates := map[string][]float64{}
			failures := map[string]int{}
			counts := map[string][]int{}
			b.ResetTimer()
			for round := range throughputRounds * b.N {
				for j := range tc.impls {
					impl := tc.impls[(j+round)%len(tc.impls)]
					r := rlWorkers(b, cs[impl], func(w int) string { return tc.key(impl, k, round, w) }, tc.run)
					rates[impl] = append(rates[impl], r.rate())
					failures[impl] += r.failures
					if counts[impl] == nil {
						counts[impl] = make([]int, len(r.counts))
					}
					for w, n := range r.counts {
						counts[impl][w] += n
					}
				}
			}
			b.StopTimer()
			ours, peer := tc.impls[0], tc.impls[1]
			for _, impl := range tc.impls {
				b.ReportMetric(median(rates[impl]), impl+"-acq/s")
				b.ReportMetric(float64(failures[impl]), impl+"-failures")
				if mx := slices.Max(counts[impl]); mx > 0 {
					b.ReportMetric(float64(slices.Min(counts[impl]))/float64(mx), impl+"-fairness")
				}
			}
			if p := median(rates[peer]); p > 0 {
				b.ReportMetric(median(rates[ours])/p, ours+"/"+peer)
			}
			for _, c := range tc.impls[2:] {
				if m := median(rates[c]); m > 0 && median(rates[peer]) > 0 {
					b.ReportMetric(m/median(rates[peer]), c+"/"+peer)
					b.ReportMetric(median(rates[ours])/m, ours+"/"+c)
				}
			}
			b.ReportMetric(0, "ns/op")
			for _, impl := range tc.impls {
				b.Logf("rounds (acq/s): %s %v", impl, rates[impl])
			}
		})
	}
}
