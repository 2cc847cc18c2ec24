package bench

import (
	"fmt"
	"testing"
	"time"
)

// rlB1Ops is how many acquire+release pairs each implementation runs per
// round; rounds alternate the order.
const (
	rlB1Ops    = 1500
	rlB1Rounds = 4
)

// BenchmarkRedlockB1Uncontended: one client, 5 masters, one key, acquire
// then release: our redlock (TryAcquire + Release) against redsync v4
// (TryLockContext + UnlockContext), both with a 30 s TTL, in the same
// process against the same servers, alternating A/B for rlB1Rounds rounds
// of rlB1Ops. It reports the median per-pair time of each (us),
// ours/redsync, and each one's CPU time per pair in this process
// (client-cpu-us) and in the five servers together (server-cpu-us, from
// INFO cpu). "floor" runs alongside: the write-all-then-read-all floor
// (rlFloor): the fewest requests any Redlock client can send, sent the
// way the Redlock algorithm recommends, with nothing else, so
// floor/redsync shows where ours/redsync can be expected to bottom out
// and ours/floor what our library adds to it. Run with -benchtime=1x.
func BenchmarkRedlockB1Uncontended(b *testing.B) {
	c := startRedlockNodes(b, 5)
	impls := rlImpls(b, c, c.addrs)
	for _, im := range impls { // warm up connections and scripts
		for i := range 200 {
			if err := im.op(fmt.Sprintf("rlb1:warm:%s:%d", im.name, i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	meter := newCPUMeter(b, c.addrs)
	us := map[string][]float64{}
	cpu := map[string]cpuSample{} // summed over the rounds
	b.ResetTimer()
	for range b.N {
		for r := range rlB1Rounds {
			for i := range impls {
				im := impls[(i+r)%len(impls)]
				before := meter.sample(b)
				start := time.Now()
				for j := range rlB1Ops {
					if err := im.op(fmt.Sprintf("rlb1:%s:%d", im.name, j%16)); err != nil {
						b.Fatalf("%s: %v", im.name, err)
					}
				}
				us[im.name] = append(us[im.name], float64(time.Since(start).Microseconds())/rlB1Ops)
				cpu[im.name] = cpu[im.name].add(meter.sample(b).sub(before))
			}
		}
	}
	b.StopTimer()
	o, r, f := median(us["ours"]), median(us["redsync"]), median(us["floor"])
	b.ReportMetric(o, "ours-us")
	b.ReportMetric(r, "redsync-us")
	b.ReportMetric(f, "floor-us")
	b.ReportMetric(o/r, "ours/redsync")
	b.ReportMetric(f/r, "floor/redsync")
	b.ReportMetric(o/f, "ours/floor")
	// CPU per pair: with the client and the 5 servers on 2 cores, a pair
	// costs at least (client + servers) / 2 of wall time. The servers'
	// share is not fixed by the requests alone: floor and redsync send the
	// same ones, yet server-cpu-us differs between them, so how a client
	// sends them counts too.
	pairs := float64(b.N * rlB1Rounds * rlB1Ops)
	for _, name := range []string{"ours", "redsync", "floor"} {
		b.ReportMetric(float64(cpu[name].client.Microseconds())/pairs, name+"-client-cpu-us")
		b.ReportMetric(float64(cpu[name].servers.Microseconds())/pairs, name+"-server-cpu-us")
	}
	b.Logf("rounds: ours %v, redsync %v, floor %v", us["ours"], us["redsync"], us["floor"])
}
