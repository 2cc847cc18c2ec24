package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// b5Locks is how many locks are held at once.
const b5Locks = 10000

// BenchmarkB5Memory: server memory per held lock, redissingle against a
// plain SET key NX PX 30000 with a 32-hex-digit value, the same 10,000 key
// names for both: INFO used_memory after minus before, divided by 10,000,
// each measured four times, alternating which goes first (ours/raw is the ratio of the sums). It also
// reports MEMORY USAGE of one lock key. After releasing, no key but the
// fence counter may remain. The measurement runs once per call; b.N is
// not used.
func BenchmarkB5Memory(b *testing.B) {
	s := startRedis(b)
	ctx := context.Background()
	admin := newClient(b, s, nil)
	ours := newLocker(b, s, nil, nil)
	keys := make([]string, b5Locks)
	for i := range keys {
		keys[i] = fmt.Sprintf("b5:%05d", i)
	}
	usedMemory := func() int64 {
		if err := admin.Do(ctx, "MEMORY", "PURGE").Err(); err != nil {
			b.Fatal(err)
		}
		info := admin.Info(ctx, "memory").Val()
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		b.Fatal("no used_memory in INFO memory")
		return 0
	}
	raw := func() (int64, int64) {
		before := usedMemory()
		parallel(b, len(keys), func(i int) error {
			var tb [16]byte
			_, _ = rand.Read(tb[:])
			return admin.SetNX(ctx, keys[i], hex.EncodeToString(tb[:]), 30*time.Second).Err()
		})
		after := usedMemory()
		usage := admin.MemoryUsage(ctx, keys[0]).Val()
		if err := admin.Del(ctx, keys...).Err(); err != nil {
			b.Fatal(err)
		}
		return after - before, usage
	}
	mine := func() (int64, int64) {
		before := usedMemory()
		leases := make([]distlock.Lease, len(keys))
		parallel(b, len(keys), func(i int) error {
			var err error
			leases[i], err = ours.TryAcquire(ctx, keys[i])
			return err
		})
		after := usedMemory()
		usage := admin.MemoryUsage(ctx, keys[0]).Val()
		parallel(b, len(keys), func(i int) error { return leases[i].Release(ctx) })
		return after - before, usage
	}
	var rawSum, oursSum, rawUsage, oursUsage int64
	mine()             // creates the fence counter and warms the connections
	for i := range 4 { // alternate which goes first
		var d int64
		if i%2 == 0 {
			d, rawUsage = raw()
			rawSum += d
		}
		d, oursUsage = mine()
		oursSum += d
		if i%2 == 1 {
			d, rawUsage = raw()
			rawSum += d
		}
	}
	left, err := admin.Keys(ctx, "*").Result()
	if err != nil {
		b.Fatal(err)
	}
	if len(left) != 1 || left[0] != "distlock:fence" {
		b.Fatalf("keys left after release: %d (%.5v)", len(left), left)
	}
	b.ReportMetric(float64(rawSum)/4/b5Locks, "raw-B/lock")
	b.ReportMetric(float64(oursSum)/4/b5Locks, "ours-B/lock")
	b.ReportMetric(float64(oursSum)/float64(rawSum), "ours/raw")
	b.ReportMetric(float64(rawUsage), "raw-usage-B")
	b.ReportMetric(float64(oursUsage), "ours-usage-B")
	b.ReportMetric(0, "ns/op")
}

// parallel runs f(0..n-1) on 8 goroutines and fails b on the first error.
func parallel(b *testing.B, n int, f func(i int) error) {
	b.Helper()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}
