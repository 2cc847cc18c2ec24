package bench

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkB7Herd: server commands per acquisition with k = 1, 8, 64
// contenders on one key (1 ms hold, forced hand-off as in B2), spread over
// up to 8 clients (each Locker with its own pub/sub connection, as
// separate processes), counted over b.N acquisitions after the first k.
// cmds/acq is the server's INFO total_commands_processed delta per
// acquisition; Redis counts every redis.call inside a script as a command
// too. req/acq counts the requests the clients sent (what a
// client-side command counter sees). The p50-us hand-off latency shows
// whether more waiters slow the hand-off.
func BenchmarkB7Herd(b *testing.B) {
	s := startRedis(b)
	ctx := context.Background()
	for _, impl := range []string{"ours", "bsm"} {
		for _, k := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("%s/k=%d", impl, k), func(b *testing.B) {
				var count counter
				cs := contenders(b, s, impl, k, &count)
				warm(b, cs)
				var cmds, reqs [2]int64
				at := func(n int) {
					i := min(n-k, 1)
					c, err := s.node.Commands(ctx)
					if err != nil {
						b.Error(err)
					}
					cmds[i], reqs[i] = c, count.n.Load()
				}
				b.ResetTimer()
				r := contend(b, cs, fmt.Sprintf("b7:%s:%d:%d", impl, k, time.Now().UnixNano()), time.Millisecond, k, b.N, at)
				b.StopTimer()
				b.ReportMetric(float64(cmds[1]-cmds[0])/float64(b.N), "cmds/acq")
				b.ReportMetric(float64(reqs[1]-reqs[0])/float64(b.N), "req/acq")
				reportHandoffs(b, r)
			})
		}
	}
}
