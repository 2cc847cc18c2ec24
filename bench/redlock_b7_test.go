package bench

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkRedlockB7Herd: server commands per acquisition on 5 masters
// with k = 1, 8, 64 contenders on one key (2 ms hold, forced hand-off as in
// B2), spread over up to maxLockers Lockers/redsyncs. cmds/acq is the sum
// over the nodes of INFO total_commands_processed per acquisition, counted
// after the first k acquisitions (Redis counts every redis.call inside a
// script too); the target is <= 6N = 30, independent of k. p50-us shows
// whether more waiters slow the hand-off. Run with -benchtime=1x.
func BenchmarkRedlockB7Herd(b *testing.B) {
	c := startRedlockNodes(b, 5)
	ctx := context.Background()
	total := func() int64 {
		var sum int64
		for _, n := range c.nodes {
			v, err := n.Commands(ctx)
			if err != nil {
				b.Error(err)
			}
			sum += v
		}
		return sum
	}
	for _, impl := range []string{"ours", "redsync"} {
		for _, k := range []int{1, 8, 64} {
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
				var cmds [2]int64
				at := func(done int) { cmds[min(done-k, 1)] = total() }
				b.ResetTimer()
				r := contend(b, all, fmt.Sprintf("rlb7:%s:%d:%d", impl, k, time.Now().UnixNano()), 2*time.Millisecond, k, n*b.N, at)
				b.StopTimer()
				b.ReportMetric(float64(cmds[1]-cmds[0])/float64(n*b.N), "cmds/acq")
				reportHandoffs(b, r)
			})
		}
	}
}
