package bench

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkB2Handoff: k contenders on one key, each holding it 2 ms and
// then waiting for someone else to take it, so k-1 are parked in Acquire
// at every release. It reports the hand-off latency (the releaser starts
// Release -> the next holder's Acquire returns), p50 and p99 in us, over
// b.N hand-offs after the first k acquisitions; ns/op is the time per
// acquisition (hold included). bsm/redislock, polling every 10 ms, for
// reference.
func BenchmarkB2Handoff(b *testing.B) {
	s := startRedis(b)
	for _, impl := range []string{"ours", "bsm"} {
		for _, k := range []int{2, 8, 64} {
			b.Run(fmt.Sprintf("%s/k=%d", impl, k), func(b *testing.B) {
				cs := contenders(b, s, impl, k, nil)
				warm(b, cs)
				b.ResetTimer()
				r := contend(b, cs, fmt.Sprintf("b2:%s:%d:%d", impl, k, time.Now().UnixNano()), 2*time.Millisecond, k, b.N, nil)
				b.StopTimer()
				reportHandoffs(b, r)
			})
		}
	}
}

func reportHandoffs(b *testing.B, r contention) {
	if len(r.handoffs) == 0 {
		return
	}
	b.ReportMetric(float64(percentile(r.handoffs, 0.50).Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(percentile(r.handoffs, 0.99).Nanoseconds())/1e3, "p99-us")
}
