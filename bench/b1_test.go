package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// rawRelease is the compare-and-delete every single-Redis lock uses.
var rawRelease = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

// b1Rounds is how many times each implementation runs, in rotating order.
const b1Rounds = 3

// BenchmarkB1Uncontended: one client, one key, acquire then release, in
// the same process against the same server: the raw SET NX PX + EVAL
// compare-and-delete pair (the floor), redissingle (TryAcquire + Release
// with context.Background; "ours-ctx" with a cancellable context, with
// which each request runs on its own goroutine so that the call can return
// when ctx ends) and bsm/redislock v0.9.4 (Obtain without retry +
// Release). Each runs b1Rounds times in rotating order; "ratio" reports
// the medians (us) and ours/raw, ours/bsm. "interleaved" runs all four in
// every iteration, timing each operation, so that the machine's slow
// phases hit all four alike; the per-phase rounds are more exposed to them.
func BenchmarkB1Uncontended(b *testing.B) {
	impls := b1Impls(b)
	nsop := map[string][]float64{}
	for r := range b1Rounds {
		for i := range impls {
			im := impls[(i+r)%len(impls)]
			nsop[im.name] = append(nsop[im.name], b1Phase(b, im))
		}
	}
	b.Run("ratio", func(b *testing.B) {
		m := map[string]float64{}
		for _, im := range impls {
			m[im.name] = median(nsop[im.name])
		}
		reportB1(b, impls, m)
		b.ReportMetric(0, "ns/op")
	})
	// interleaved: every iteration runs each implementation once, in
	// rotating order, timing each operation; slow phases of the machine
	// then hit all of them alike.
	b.Run("interleaved", func(b *testing.B) { b1Interleaved(b, impls) })
}

// b1Impl is one acquire-then-release implementation measured by B1.
type b1Impl struct {
	name string
	op   func(ctx context.Context, key string) error
}

// b1Impls starts the Redis server and returns the four implementations
// BenchmarkB1Uncontended measures, in their rotation order.
func b1Impls(b *testing.B) []b1Impl {
	node := startRedis(b)
	raw := newClient(b, node, nil)
	ours := newLocker(b, node, nil, nil)
	bsm := redislock.New(newClient(b, node, nil))
	cctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	const ttl = 30 * time.Second
	return []b1Impl{
		{"raw", func(ctx context.Context, key string) error {
			var tb [16]byte
			_, _ = rand.Read(tb[:])
			token := hex.EncodeToString(tb[:])
			ok, err := raw.SetNX(ctx, key, token, ttl).Result()
			if err != nil || !ok {
				return fmt.Errorf("SET NX: %v %v", ok, err)
			}
			return rawRelease.Run(ctx, raw, []string{key}, token).Err()
		}},
		{"ours", func(ctx context.Context, key string) error {
			ls, err := ours.TryAcquire(ctx, key)
			if err != nil {
				return err
			}
			return ls.Release(ctx)
		}},
		{"ours-ctx", func(_ context.Context, key string) error {
			ls, err := ours.TryAcquire(cctx, key)
			if err != nil {
				return err
			}
			return ls.Release(cctx)
		}},
		{"bsm", func(ctx context.Context, key string) error {
			lk, err := bsm.Obtain(ctx, key, ttl, nil)
			if err != nil {
				return err
			}
			return lk.Release(ctx)
		}},
	}
}

// b1Phase runs im alone as the sub-benchmark im.name, after one warm-up
// call, and returns its mean ns per acquire-release pair.
func b1Phase(b *testing.B, im b1Impl) float64 {
	var last float64
	b.Run(im.name, func(b *testing.B) {
		ctx := context.Background()
		key := "b1:" + im.name
		if err := im.op(ctx, key); err != nil { // warm: connection, script cache
			b.Fatal(err)
		}
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			if err := im.op(ctx, key); err != nil {
				b.Fatal(err)
			}
		}
		last = float64(time.Since(start).Nanoseconds()) / float64(b.N)
	})
	return last
}

// b1Interleaved runs every implementation once per iteration, in rotating
// order, timing each operation, and reports the means.
func b1Interleaved(b *testing.B, impls []b1Impl) {
	ctx := context.Background()
	total := make([]time.Duration, len(impls))
	for i, im := range impls {
		if err := im.op(ctx, "b1i:"+im.name); err != nil {
			b.Fatal(err)
		}
		total[i] = 0
	}
	for n := range b.N {
		for j := range impls {
			i := (j + n) % len(impls)
			start := time.Now()
			if err := impls[i].op(ctx, "b1i:"+impls[i].name); err != nil {
				b.Fatal(err)
			}
			total[i] += time.Since(start)
		}
	}
	m := map[string]float64{}
	for i, im := range impls {
		m[im.name] = float64(total[i].Nanoseconds()) / float64(b.N)
	}
	reportB1(b, impls, m)
}

// reportB1 reports each implementation's time m (ns) in us and the ratios
// ours/raw, ours/bsm and ours-ctx/raw.
func reportB1(b *testing.B, impls []b1Impl, m map[string]float64) {
	for _, im := range impls {
		b.ReportMetric(m[im.name]/1e3, im.name+"-us")
	}
	b.ReportMetric(m["ours"]/m["raw"], "ours/raw")
	b.ReportMetric(m["ours"]/m["bsm"], "ours/bsm")
	b.ReportMetric(m["ours-ctx"]/m["raw"], "ours-ctx/raw")
}
