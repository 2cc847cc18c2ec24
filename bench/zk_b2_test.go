package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock/testbed"
)

// BenchmarkZKB2Handoff: k contenders on one key, 2 ms hold, forced
// hand-off (see contend), so k-1 are parked at every release: p50/p99 of
// release start -> next holder's Acquire returns, zklock against
// go-zookeeper's Lock, both woken by the watch on the predecessor node.
// Contenders are spread over up to 8 sessions. "ratio" reports ours/peer
// per k (p50) and each one's p50 at k=64 over k=2 (flatness). The
// servers run with forceSync=no (see B1).
func BenchmarkZKB2Handoff(b *testing.B) {
	z := startZK(b, testbed.ZooKeeperOptions{NoFsync: true})
	p50 := map[string]float64{}
	for _, k := range []int{2, 8, 64} {
		for _, impl := range []string{"peer", "ours"} {
			b.Run(fmt.Sprintf("%s/k=%d", impl, k), func(b *testing.B) {
				cs := zkContenders(b, z, impl, k)
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
		for _, impl := range []string{"ours", "peer"} {
			if p := p50[impl+"/2"]; p > 0 {
				b.ReportMetric(p50[impl+"/64"]/p, impl+"-k64/k2")
			}
		}
		b.ReportMetric(0, "ns/op")
	})
}
