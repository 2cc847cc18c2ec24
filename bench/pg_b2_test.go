package bench

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkPGB2Handoff: k contenders on one key, each holding it 2 ms and
// then waiting for someone else to take it (see contend): ours (Acquire
// waits on the server; k contenders spread over up to maxLockers Lockers,
// each waiting Acquire on a connection of its own) against raw blocking
// pg_advisory_lock, one pgx connection per contender. It reports the
// hand-off latency (release starts -> the next holder's Acquire returns),
// p50 and p99 in us, and for ours the server sessions per contender while
// k-1 wait. raw+nextval is the raw lock drawing a durable fence from our
// sequence, as ours does. Compare ours/k=N with raw/k=N and
// raw+nextval/k=N. Run with -benchtime=1x.
func BenchmarkPGB2Handoff(b *testing.B) {
	s := startPG(b)
	for _, k := range []int{2, 8, 64} {
		for _, impl := range []string{"raw", "raw+nextval", "ours"} {
			b.Run(fmt.Sprintf("%s/k=%d", impl, k), func(b *testing.B) {
				all := make([]contender, k)
				if impl != "ours" {
					for i := range all {
						all[i] = pgRawContender{c: s.rawConn(b), fence: impl == "raw+nextval"}
					}
				} else {
					ls := make([]contender, min(k, maxLockers))
					for i := range ls {
						ls[i] = pgOursContender{s.locker(b, nil)}
					}
					for i := range all {
						all[i] = ls[i%len(ls)]
					}
				}
				var conns int
				at := func(n int) {
					if n > k && impl == "ours" {
						conns = s.sessions(b, "distlock")
					}
				}
				b.ResetTimer()
				r := contend(b, all, fmt.Sprintf("pgb2:%s:%d:%d", impl, k, time.Now().UnixNano()), 2*time.Millisecond, k, 400*b.N, at)
				b.StopTimer()
				reportHandoffs(b, r)
				if impl == "ours" {
					b.ReportMetric(float64(conns)/float64(k), "sessions/contender")
				}
			})
		}
	}
}
