package bench

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkRedlockB2Handoff: k contenders on one key over 5 masters, each
// holding it 2 ms and then waiting for someone else to take it (see
// contend), spread over up to maxLockers Lockers/redsyncs. It reports the
// hand-off latency (release starts -> the next holder's Acquire returns),
// p50 and p99 in us. A fixed number of hand-offs per case keeps the run
// short: redsync polls every 50-250 ms. Run with -benchtime=1x.
func BenchmarkRedlockB2Handoff(b *testing.B) {
	c := startRedlockNodes(b, 5)
	for _, impl := range []string{"ours", "redsync"} {
		for _, k := range []int{2, 8, 64} {
			b.Run(fmt.Sprintf("%s/k=%d", impl, k), func(b *testing.B) {
				n := 300
				if impl == "redsync" {
					n = 40
				}
				cs := make([]contender, min(k, maxLockers))
				for i := range cs {
					if impl == "ours" {
						cs[i] = redlockContender{c.ours(b, c.addrs, nil)}
					} else {
						cs[i] = redsyncContender{c.redsync(b, c.addrs)}
					}
				}
				all := make([]contender, k)
				for i := range all {
					all[i] = cs[i%len(cs)]
				}
				b.ResetTimer()
				r := contend(b, all, fmt.Sprintf("rlb2:%s:%d:%d", impl, k, time.Now().UnixNano()), 2*time.Millisecond, k, n*b.N, nil)
				b.StopTimer()
				reportHandoffs(b, r)
			})
		}
	}
}
