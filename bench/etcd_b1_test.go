package bench

import (
	"context"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"
)

// BenchmarkEtcdB1Uncontended: one key, acquire then release on
// a 3-member cluster: concurrency.Mutex Lock+Unlock on a shared session
// (the peer: a put-if-absent transaction, then a delete) against
// etcdlock's Acquire+Release ("ours": the same two requests on a shared
// lease, plus the lease and its timers) and TryAcquire+Release
// ("ours-try"). "interleaved" runs all three in every iteration, in
// rotating order, timing each, so that the machine's slow phases hit them
// alike; it reports the means (us), ours/peer, and this process's CPU
// per pair (client-cpu-us; it includes every client's background work
// during the pair, such as lease keepalives). Each implementation has
// its own client (see below).
func BenchmarkEtcdB1Uncontended(b *testing.B) {
	e := startEtcd(b)
	// Each implementation has its own client: the client spreads its
	// requests over the members in turn (gRPC round robin), so two
	// implementations sharing one client would take turns on it in a
	// pattern that, with the rotating order below, sends one of them to
	// the same members again and again (ours' Acquire never reached one
	// of the three). On its own client, each one's requests cycle
	// through the members alike.
	ours, oursTry := e.ours(b, nil), e.ours(b, nil)
	sess := session(b, e.client(b))
	type impl struct {
		name string
		op   func(ctx context.Context) error
	}
	impls := []impl{
		{"peer", func(ctx context.Context) error {
			m := concurrency.NewMutex(sess, "b1-peer")
			if err := m.Lock(ctx); err != nil {
				return err
			}
			return m.Unlock(ctx)
		}},
		{"ours", func(ctx context.Context) error {
			ls, err := ours.Acquire(ctx, "b1-ours")
			if err != nil {
				return err
			}
			return ls.Release(ctx)
		}},
		{"ours-try", func(ctx context.Context) error {
			ls, err := oursTry.TryAcquire(ctx, "b1-try")
			if err != nil {
				return err
			}
			return ls.Release(ctx)
		}},
	}
	ctx := context.Background()
	for _, im := range impls {
		if err := im.op(ctx); err != nil { // warm: connections, lease
			b.Fatal(err)
		}
	}
	b.Run("interleaved", func(b *testing.B) {
		total := make([]time.Duration, len(impls))
		cpu := make([]time.Duration, len(impls))
		for n := range b.N {
			for j := range impls {
				i := (j + n) % len(impls)
				c0 := processCPU(b)
				start := time.Now()
				if err := impls[i].op(ctx); err != nil {
					b.Fatal(err)
				}
				total[i] += time.Since(start)
				cpu[i] += processCPU(b) - c0
			}
		}
		for i, im := range impls {
			b.ReportMetric(float64(cpu[i].Microseconds())/float64(b.N), im.name+"-client-cpu-us")
		}
		m := map[string]float64{}
		for i, im := range impls {
			m[im.name] = float64(total[i].Nanoseconds()) / float64(b.N)
			b.ReportMetric(m[im.name]/1e3, im.name+"-us")
		}
		b.ReportMetric(m["ours"]/m["peer"], "ours/peer")
		b.ReportMetric(m["ours-try"]/m["peer"], "ours-try/peer")
	})
}
