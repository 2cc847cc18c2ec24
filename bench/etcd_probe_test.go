package bench

import (
	"context"
	"testing"
	"time"
)

// BenchmarkEtcdPutProbe times b.N Puts of one key from one client, one at
// a time, and reports their p50 and p90: the price of one Raft write where
// the benchmarks run, to read the other etcd figures against. Every
// hand-off of a queue lock waits for at least one such commit, so B2's
// latencies and B3's ratio against Mutex (whose rate does not depend on
// it) move with this figure.
func BenchmarkEtcdPutProbe(b *testing.B) {
	e := startEtcd(b)
	cli := e.client(b)
	ctx := context.Background()
	if _, err := cli.Put(ctx, "put-probe", "x"); err != nil { // warm
		b.Fatal(err)
	}
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := cli.Put(ctx, "put-probe", "x"); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(ds, 0.5).Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(percentile(ds, 0.9).Nanoseconds())/1e3, "p90-us")
}
