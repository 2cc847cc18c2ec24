package bench

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkEtcdB2Handoff: k contenders on one key, 2 ms hold, forced
// hand-off (see contend), so k-1 are parked at every release: p50/p99 of
// release start -> next holder's Acquire returns, etcdlock against
// concurrency.Mutex. Both wait on the predecessor's deletion; Mutex's
// watch starts at a revision already reached, which etcd serves from its
// 100 ms catch-up loop. "ratio" reports ours/peer (p50) per k.
func BenchmarkEtcdB2Handoff(b *testing.B) {
	e := startEtcd(b)
	p50 := map[string]float64{}
	for _, k := range []int{2, 8, 64} {
		for _, impl := range []string{"peer", "ours"} {
			b.Run(fmt.Sprintf("%s/k=%d", impl, k), func(b *testing.B) {
				cs := etcdContenders(b, e, impl, k)
				b.ResetTimer()
				r := contend(b, cs, fmt.Sprintf("b2-%s-%d-%d", impl, k, time.Now().UnixNano()), 2*time.Millisecond, k, b.N, nil)
				b.StopTimer()
				reportHandoffs(b, r)
				p50[fmt.Sprintf("%s/%d", impl, k)] = float64(percentile(r.handoffs, 0.5).Nanoseconds()) / 1e3
			})
		}
	}
	b.Run("ratio", func(b *testing.B) {
		for _, k := range []int{2, 8, 64} {
			if p := p50[fmt.Sprintf("peer/%d", k)]; p > 0 {
				b.ReportMetric(p50[fmt.Sprintf("ours/%d", k)]/p, fmt.Sprintf("ours/peer-k%d", k))
			}
		}
		b.ReportMetric(0, "ns/op")
	})
}

// BenchmarkEtcdB3OneKey: k workers loop acquire-release (no hold) on one
// key for rlThroughputDur x b.N: acquisitions per second, per-worker
// fairness (min/max count) and failures (an acquisition not done within
// rlAcquireTimeout), etcdlock against concurrency.Mutex; "ratio" reports
// ours/peer throughput per k (target >= 4 at k=8).
func BenchmarkEtcdB3OneKey(b *testing.B) {
	e := startEtcd(b)
	rate := map[string]float64{}
	for _, k := range []int{1, 8, 64} {
		for _, impl := range []string{"peer", "ours"} {
			b.Run(fmt.Sprintf("%s/k=%d", impl, k), func(b *testing.B) {
				cs := etcdContenders(b, e, impl, k)
				key := fmt.Sprintf("b3-%s-%d-%d", impl, k, time.Now().UnixNano())
				b.ResetTimer()
				r := rlWorkers(b, cs, func(int) string { return key }, time.Duration(b.N)*rlThroughputDur)
				b.StopTimer()
				total := 0
				for _, c := range r.counts {
					total += c
				}
				rate[fmt.Sprintf("%s/%d", impl, k)] = float64(total) / r.elapsed.Seconds()
				b.ReportMetric(float64(total)/r.elapsed.Seconds(), "acq/s")
				if mx := slices.Max(r.counts); mx > 0 {
					b.ReportMetric(float64(slices.Min(r.counts))/float64(mx), "fairness")
				}
				b.ReportMetric(float64(r.failures), "failures")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
	b.Run("ratio", func(b *testing.B) {
		for _, k := range []int{1, 8, 64} {
			if p := rate[fmt.Sprintf("peer/%d", k)]; p > 0 {
				b.ReportMetric(rate[fmt.Sprintf("ours/%d", k)]/p, fmt.Sprintf("ours/peer-k%d", k))
			}
		}
		b.ReportMetric(0, "ns/op")
	})
}
