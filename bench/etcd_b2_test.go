package bench

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkEtcdB2Handoff: k contenders on one key, 2 ms hold, forced
// hand-off (see contend), so k-1 are parked at every release: p50/p99 of
// release start -> next holder's Acquire returns, etcdlock against
// concurrency.Mutex. Both wait on the predecessor's deletion; Mutex's
// watch starts at a revision already reached, which etcd serves from its
// 100 ms catch-up loop. The bare protocol (etcdFloor) runs beside them:
// the target is absolute (p50 <= 2.5 ms), and the floor shows what the
// servers' commit latency allows. "ratio" reports ours/peer and
// ours/floor (p50) per k.
func BenchmarkEtcdB2Handoff(b *testing.B) {
	e := startEtcd(b)
	p50 := map[string]float64{}
	for _, k := range []int{2, 8, 64} {
		for _, impl := range []string{"peer", "ours", "floor"} {
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
			for _, c := range []string{"peer", "floor"} {
				if p := p50[fmt.Sprintf("%s/%d", c, k)]; p > 0 {
					b.ReportMetric(p50[fmt.Sprintf("ours/%d", k)]/p, fmt.Sprintf("ours/%s-k%d", c, k))
				}
			}
		}
		b.ReportMetric(0, "ns/op")
	})
}

// BenchmarkEtcdB3OneKey: k workers loop acquire-release (no hold) on one
// key, etcdlock against concurrency.Mutex and the bare protocol
// (etcdFloor): per k, the median acquisitions/s of throughputRounds
// alternating rounds of rlThroughputDur each, ours/peer (target >= 4 at
// k=8), floor/peer, ours/floor, failures (an acquisition not done within
// rlAcquireTimeout) and fairness (see runThroughput). Run with
// -benchtime=1x.
func BenchmarkEtcdB3OneKey(b *testing.B) {
	e := startEtcd(b)
	runThroughput(b, throughputCase{
		impls:      []string{"ours", "peer", "floor"},
		ks:         []int{1, 8, 64},
		contenders: func(b *testing.B, impl string, k int) []contender { return etcdContenders(b, e, impl, k) },
		key: func(impl string, k, round, _ int) string {
			return fmt.Sprintf("b3-%s-%d-%d", impl, k, round) // one key per round
		},
		run: rlThroughputDur,
	})
}
