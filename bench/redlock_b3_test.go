package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// rlThroughputDur is how long each case of B3 and B4 runs (times b.N).
const rlThroughputDur = 1500 * time.Millisecond

// rlAcquireTimeout bounds one blocking acquisition in B3 and B4: one that
// runs out is a failure.
const rlAcquireTimeout = 2 * time.Second

// rlContenders returns k contenders of impl ("ours" or "redsync") over
// c's masters, spread over up to maxLockers Lockers/redsyncs, each warmed
// up (connections, scripts, subscriptions).
func rlContenders(b *testing.B, c *rlCluster, impl string, k int) []contender {
	b.Helper()
	cs := make([]contender, min(k, maxLockers))
	for i := range cs {
		if impl == "ours" {
			cs[i] = redlockContender{c.ours(b, c.addrs, nil)}
		} else {
			cs[i] = redsyncContender{c.redsync(b, c.addrs)}
		}
	}
	warm(b, cs)
	all := make([]contender, k)
	for i := range all {
		all[i] = cs[i%len(cs)]
	}
	return all
}

// rlRun is the outcome of one throughput run.
type rlRun struct {
	counts   []int // acquisitions per worker
	failures int   // acquisitions that failed or ran out of rlAcquireTimeout
	elapsed  time.Duration
}

// rlWorkers runs one goroutine per contender, each looping acquire
// key(w) (bounded by rlAcquireTimeout) then release at once, for d.
// Acquisitions cut off by the end of the run are not counted either way.
func rlWorkers(b *testing.B, cs []contender, key func(w int) string, d time.Duration) rlRun {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r := rlRun{counts: make([]int, len(cs))}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	start := time.Now()
	for w, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				actx, acancel := context.WithTimeout(ctx, rlAcquireTimeout)
				release, err := c.acquire(actx, key(w))
				acancel()
				if err != nil {
					if ctx.Err() == nil {
						r.fail(b, &mu, "acquire", err)
					}
					continue
				}
				if err := release(context.Background()); err != nil {
					// A release that a majority did not confirm within the
					// node timeout (an overloaded host) is a failure of
					// the run, counted; anything else is a bug.
					if !errors.Is(err, distlock.ErrUnavailable) {
						b.Errorf("release: %v", err)
					}
					r.fail(b, &mu, "release", err)
					continue
				}
				r.counts[w]++
			}
		}()
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	return r
}

// maxLoggedFailures is how many failures of one run are logged with
// their error; the rest are only counted.
const maxLoggedFailures = 3

// fail counts a failure and logs the first few, so that a run with
// failures says what they were.
func (r *rlRun) fail(b *testing.B, mu *sync.Mutex, op string, err error) {
	mu.Lock()
	defer mu.Unlock()
	r.failures++
	if r.failures <= maxLoggedFailures {
		b.Logf("failure %d: %s: %v", r.failures, op, err)
	}
}

func (r rlRun) total() int {
	n := 0
	for _, c := range r.counts {
		n += c
	}
	return n
}

func (r rlRun) rate() float64 { return float64(r.total()) / r.elapsed.Seconds() }

// BenchmarkRedlockB3OneKey: k = 1, 8, 64 workers on one key over 5
// masters, each looping blocking acquire + immediate release (ours:
// Acquire + Release; redsync: LockContext with unbounded tries +
// UnlockContext), spread over up to maxLockers Lockers/redsyncs: per k,
// the median acquisitions/s of throughputRounds alternating rounds of
// rlThroughputDur each, ours/redsync, failures (an acquisition that errs
// or waits longer than rlAcquireTimeout) and fairness (see runThroughput).
// Run with -benchtime=1x.
func BenchmarkRedlockB3OneKey(b *testing.B) {
	c := startRedlockNodes(b, 5)
	runThroughput(b, throughputCase{
		impls:      []string{"ours", "redsync"},
		ks:         []int{1, 8, 64},
		contenders: func(b *testing.B, impl string, k int) []contender { return rlContenders(b, c, impl, k) },
		key: func(impl string, k, round, _ int) string {
			return fmt.Sprintf("rlb3:%s:%d:%d", impl, k, round) // one key per round
		},
		run: rlThroughputDur,
	})
}
