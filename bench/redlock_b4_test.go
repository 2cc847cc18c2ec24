package bench

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkRedlockB4ManyKeys: k = 1, 8, 64 workers over 5 masters, each
// on its own key, looping blocking acquire + immediate release (as in B3:
// ours Acquire + Release, redsync LockContext + UnlockContext), spread
// over up to maxLockers Lockers/redsyncs, for rlThroughputDur per b.N. It
// reports the total acquisitions/s (and failures, per-worker min and max).
// Run with -benchtime=1x.
func BenchmarkRedlockB4ManyKeys(b *testing.B) {
	c := startRedlockNodes(b, 5)
	rates := map[string]float64{}
	for _, k := range []int{1, 8, 64} {
		for _, impl := range []string{"ours", "redsync"} {
			b.Run(fmt.Sprintf("%s/k=%d", impl, k), func(b *testing.B) {
				cs := rlContenders(b, c, impl, k)
				prefix := fmt.Sprintf("rlb4:%s:%d:%d", impl, k, time.Now().UnixNano())
				keys := make([]string, k)
				for w := range keys {
					keys[w] = fmt.Sprintf("%s:%d", prefix, w)
				}
				b.ResetTimer()
				r := rlWorkers(b, cs, func(w int) string { return keys[w] }, time.Duration(b.N)*rlThroughputDur)
				b.StopTimer()
				r.report(b)
				rates[fmt.Sprintf("%s/%d", impl, k)] = r.rate()
			})
		}
		if o, r := rates[fmt.Sprintf("ours/%d", k)], rates[fmt.Sprintf("redsync/%d", k)]; r > 0 {
			b.Logf("B4 k=%d: ours/redsync throughput %.2fx", k, o/r)
		}
	}
}
