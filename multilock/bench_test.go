package multilock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/memlock"
	"github.com/distlock/distlock/multilock"
)

// benchKeys returns n keys.
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench-%02d", i)
	}
	return keys
}

// acquireRelease takes keys as one lease and releases it, failing b on
// any error.
func acquireRelease(b *testing.B, ctx context.Context, l distlock.Locker, keys []string) {
	ml, err := multilock.Acquire(ctx, l, keys)
	if err != nil {
		b.Fatal(err)
	}
	if err := ml.Release(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAcquireRelease measures a multilock Acquire+Release of 1 and
// 8 keys on memlock, and a plain Locker Acquire+Release of one key for
// the cost of the Lease itself.
func BenchmarkAcquireRelease(b *testing.B) {
	l := memlock.New(nil)
	defer l.Close()
	ctx := context.Background()
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			ls, err := l.Acquire(ctx, "bench-00")
			if err != nil {
				b.Fatal(err)
			}
			if err := ls.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, n := range []int{1, 8} {
		keys := benchKeys(n)
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			for b.Loop() {
				acquireRelease(b, ctx, l, keys)
			}
		})
	}
}

// BenchmarkRatio8To1 alternates an Acquire+Release of 8 keys and of 1 key
// on memlock and reports their mean times and the ratio (8keys/1key).
// Without an atomic multi-key form the ratio grows with the key count.
func BenchmarkRatio8To1(b *testing.B) {
	l := memlock.New(nil)
	defer l.Close()
	ctx := context.Background()
	one, eight := benchKeys(1), benchKeys(8)
	var t1, t8 time.Duration
	for b.Loop() {
		start := time.Now()
		acquireRelease(b, ctx, l, one)
		mid := time.Now()
		acquireRelease(b, ctx, l, eight)
		t1, t8 = t1+mid.Sub(start), t8+time.Since(mid)
	}
	n := float64(b.N)
	b.ReportMetric(float64(t1.Nanoseconds())/n, "ns/1key")
	b.ReportMetric(float64(t8.Nanoseconds())/n, "ns/8keys")
	b.ReportMetric(float64(t8)/float64(t1), "8keys/1key")
}
