package bench

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/testbed"
)

// BenchmarkZKB1Uncontended: one client, one key, acquire then release on
// a 3-server ensemble: go-zookeeper's Lock+Unlock (the peer: create,
// list, delete) against zklock's Acquire+Release ("ours": create, list
// and a watched read of the own node pipelined, delete; a lease with its
// expiry timer) and TryAcquire+Release ("ours-try"). "interleaved" runs
// all three in every iteration, in rotating order, timing each operation,
// so that the machine's slow phases hit them alike; it reports the means
// (us) and ours/peer. "fsync" runs on servers that fsync every
// transaction (the default), "nofsync" with forceSync=no, where a slow
// disk does not drown the client's part.
func BenchmarkZKB1Uncontended(b *testing.B) {
	for _, mode := range []string{"nofsync", "fsync"} {
		b.Run(mode, func(b *testing.B) { zkB1(b, testbed.ZooKeeperOptions{NoFsync: mode == "nofsync"}) })
	}
}

func zkB1(b *testing.B, opts testbed.ZooKeeperOptions) {
	z := startZK(b, opts)
	ours := z.ours(b, nil)
	peerConn := z.conn(b)
	acl := zk.WorldACL(zk.PermAll)
	type impl struct {
		name string
		op   func(ctx context.Context) error
	}
	impls := []impl{
		{"peer", func(context.Context) error {
			lk := zk.NewLock(peerConn, "/bench-peer/b1", acl)
			if err := lk.Lock(); err != nil {
				return err
			}
			return lk.Unlock()
		}},
		{"ours", func(ctx context.Context) error {
			ls, err := ours.Acquire(ctx, "b1")
			if err != nil {
				return err
			}
			return ls.Release(ctx)
		}},
		{"ours-try", func(ctx context.Context) error {
			ls, err := ours.TryAcquire(ctx, "b1-try")
			if err != nil {
				return err
			}
			return ls.Release(ctx)
		}},
	}
	ctx := context.Background()
	for _, im := range impls {
		if err := im.op(ctx); err != nil { // warm: session, parents
			b.Fatal(err)
		}
	}
	b.Run("interleaved", func(b *testing.B) {
		total := make([]time.Duration, len(impls))
		for n := range b.N {
			for j := range impls {
				i := (j + n) % len(impls)
				start := time.Now()
				if err := impls[i].op(ctx); err != nil {
					b.Fatal(err)
				}
				total[i] += time.Since(start)
			}
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
