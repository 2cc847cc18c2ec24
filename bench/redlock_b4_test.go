package bench

import (
	"fmt"
	"testing"
)

// BenchmarkRedlockB4ManyKeys: k = 1, 8, 64 workers over 5 masters, each
// on its own key, looping blocking acquire + immediate release (as in B3:
// ours Acquire + Release, redsync LockContext + UnlockContext), spread
// over up to maxLockers Lockers/redsyncs: per k, the median
// acquisitions/s of throughputRounds alternating rounds of
// rlThroughputDur each, ours/redsync, failures and fairness (see
// runThroughput). Run with -benchtime=1x.
func BenchmarkRedlockB4ManyKeys(b *testing.B) {
	c := startRedlockNodes(b, 5)
	runThroughput(b, throughputCase{
		impls:      []string{"ours", "redsync"},
		ks:         []int{1, 8, 64},
		contenders: func(b *testing.B, impl string, k int) []contender { return rlContenders(b, c, impl, k) },
		key: func(impl string, k, round, w int) string {
			return fmt.Sprintf("rlb4:%s:%d:%d:%d", impl, k, round, w)
		},
		run: rlThroughputDur,
	})
}
