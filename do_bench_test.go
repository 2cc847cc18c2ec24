package distlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// benchModes are the watchdog settings the Do benchmarks compare: Do's
// default (on) and WithoutAutoExtend. The plain Acquire+Release of each
// mode takes the same options, so the pair differs only by Do's work.
var benchModes = []struct {
	name string
	opts []distlock.Option
}{
	{"watchdog", []distlock.Option{distlock.WithAutoExtend(0)}},
	{"nowatchdog", []distlock.Option{distlock.WithoutAutoExtend()}},
}

// acquireRelease is the section Do replaces, with an empty body.
func acquireRelease(ctx context.Context, l distlock.Locker, key string, opts []distlock.Option) error {
	ls, err := l.Acquire(ctx, key, opts...)
	if err != nil {
		return err
	}
	return ls.Release(ctx)
}

// doEmpty is Do with an empty fn.
func doEmpty(ctx context.Context, l distlock.Locker, key string, opts []distlock.Option) error {
	return distlock.Do(ctx, l, key, func(context.Context, distlock.Lease) error { return nil }, opts...)
}

// BenchmarkAcquireRelease measures an uncontended Acquire+Release on
// memlock, the baseline of BenchmarkDo.
func BenchmarkAcquireRelease(b *testing.B) { benchSection(b, acquireRelease) }

// BenchmarkDo measures an uncontended Do with an empty fn on memlock.
func BenchmarkDo(b *testing.B) { benchSection(b, doEmpty) }

func benchSection(b *testing.B, op func(context.Context, distlock.Locker, string, []distlock.Option) error) {
	l := newMem(b)
	ctx := context.Background()
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := op(ctx, l, "bench", m.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDoOverhead runs Do and Acquire+Release interleaved, so both
// see the same machine load, and reports each one's time (us) and the
// ratio do/acquire-release: "mem" on memlock, where there is no round trip
// and the ratio shows Do's own cost at its largest, and "redis" on
// redissingle against a Redis in a container (skipped without Docker).
func BenchmarkDoOverhead(b *testing.B) {
	b.Run("mem", func(b *testing.B) { benchOverhead(b, newMem(b)) })
	b.Run("redis", func(b *testing.B) {
		l, _ := newRedis(b)
		benchOverhead(b, l)
	})
}

func benchOverhead(b *testing.B, l distlock.Locker) {
	ctx := context.Background()
	ops := []func(context.Context, distlock.Locker, string, []distlock.Option) error{acquireRelease, doEmpty}
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			var total [2]time.Duration
			n := 0
			for b.Loop() {
				for j := range ops {
					i := (j + n) % len(ops)
					start := time.Now()
					if err := ops[i](ctx, l, "bench", m.opts); err != nil {
						b.Fatal(err)
					}
					total[i] += time.Since(start)
				}
				n++
			}
			base := float64(total[0].Nanoseconds()) / float64(n)
			do := float64(total[1].Nanoseconds()) / float64(n)
			b.ReportMetric(base/1e3, "acquire-release-us")
			b.ReportMetric(do/1e3, "do-us")
			b.ReportMetric(do/base, "do/acquire-release")
		})
	}
}

// BenchmarkReentrantInner measures an inner acquisition and release on a
// key the owner already holds through Reentrant over memlock, and reports
// the acquisitions that reached the backend per op (0: no round trip).
func BenchmarkReentrantInner(b *testing.B) {
	backend := &counting{Locker: newMem(b)}
	r := distlock.Reentrant(backend)
	ctx := distlock.WithOwner(context.Background(), "bench")
	outer, err := r.Acquire(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer outer.Release(ctx)
	before := backend.calls.Load()
	b.ReportAllocs()
	for b.Loop() {
		inner, err := r.Acquire(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := inner.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(backend.calls.Load()-before)/float64(b.N), "backend-calls/op")
}
