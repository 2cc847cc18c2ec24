package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgB2Rounds is how many alternating rounds of 400 hand-offs per
// implementation B2 runs for each k (times b.N).
const pgB2Rounds = 3

// BenchmarkPGB2Handoff: k contenders on one key, each holding it 2 ms and
// then waiting for someone else to take it (see contend): ours (Acquire
// waits on the server; k contenders spread over up to maxLockers Lockers,
// each waiting Acquire on a connection of its own) against raw blocking
// pg_advisory_lock, one pgx connection per contender. raw+nextval is the
// raw lock drawing a durable fence from our sequence, as ours does.
//
// Per k, the three run in pgB2Rounds rounds of 400 hand-offs, in rotating
// order, so that a slow phase of the machine hits them alike. It reports
// per implementation the median of the rounds' p50 hand-off latencies
// (release starts -> the next holder's Acquire returns) and the p99 of all
// its hand-offs, in us; ours/raw and ours/raw+nextval (p50); and for ours
// the server sessions per contender while k-1 wait. Run with
// -benchtime=1x.
func BenchmarkPGB2Handoff(b *testing.B) {
	s := startPG(b)
	impls := []string{"raw", "raw+nextval", "ours"}
	for _, k := range []int{2, 8, 64} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			// Ours: the same Lockers in every round. Raw: new connections
			// each round (contend's end cancels the waiting statements,
			// which closes their pgx connections), closed after it.
			ours := make([]contender, k)
			ls := make([]contender, min(k, maxLockers))
			for i := range ls {
				ls[i] = pgOursContender{s.locker(b, nil)}
			}
			for i := range ours {
				ours[i] = ls[i%len(ls)]
			}
			contenders := func(impl string) ([]contender, func()) {
				if impl == "ours" {
					return ours, func() {}
				}
				all := make([]contender, k)
				conns := make([]*pgx.Conn, k)
				for i := range all {
					conns[i] = s.rawConn(b)
					all[i] = pgRawContender{c: conns[i], fence: impl == "raw+nextval"}
				}
				return all, func() {
					for _, c := range conns {
						_ = c.Close(context.Background())
					}
				}
			}
			p50s := map[string][]float64{}
			pooled := map[string][]time.Duration{}
			conns := -1
			b.ResetTimer()
			for r := range pgB2Rounds * b.N {
				for i := range impls {
					impl := impls[(i+r)%len(impls)]
					at := func(n int) {
						if n > k && impl == "ours" && conns < 0 {
							conns = s.sessions(b, "distlock")
						}
					}
					key := fmt.Sprintf("pgb2:%s:%d:%d:%d", impl, k, r, time.Now().UnixNano())
					b.StopTimer()
					cs, done := contenders(impl)
					b.StartTimer()
					res := contend(b, cs, key, 2*time.Millisecond, k, 400, at)
					done()
					p50s[impl] = append(p50s[impl], float64(percentile(res.handoffs, 0.5).Nanoseconds())/1e3)
					pooled[impl] = append(pooled[impl], res.handoffs...)
				}
			}
			b.StopTimer()
			for _, impl := range impls {
				b.ReportMetric(median(p50s[impl]), impl+"-p50-us")
				b.ReportMetric(float64(percentile(pooled[impl], 0.99).Nanoseconds())/1e3, impl+"-p99-us")
			}
			o := median(p50s["ours"])
			b.ReportMetric(o/median(p50s["raw"]), "ours/raw")
			b.ReportMetric(o/median(p50s["raw+nextval"]), "ours/raw+nextval")
			b.ReportMetric(float64(conns)/float64(k), "sessions/contender")
			b.Logf("p50 per round (us): %v", p50s)
		})
	}
}
