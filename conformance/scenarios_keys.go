package conformance

// Scenario S34: hostile keys. Every key in the table must either be an
// independent lock or be refused at once with ErrInvalidArgument, and no
// call on it may disturb a lease on a normal key or the fence sequence.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/distlock/distlock"
)

// hostileKey is one entry of S34's table: a short name for reports and
// the key itself.
type hostileKey struct{ name, key string }

// hostileKeys lists keys that look like the backends' own keys (the Redis
// backends' fence counter, wait queues and channels under "distlock:",
// ZooKeeper's "_c_<guid>-lock-<seq>" nodes, etcd's "<key>/<lease>"
// entries), keys that are prefixes or children of one another, separators
// and empty path segments, NUL and non-UTF-8 bytes, and a 1 MiB key. The
// keys are exact, not scoped to the run: scoping them would move them
// away from the names they imitate. A parent comes before its children,
// so that phase B of s34 frees it while they are still held.
func hostileKeys() []hostileKey {
	keys := []hostileKey{
		{"orders", "orders"},
		{"orders/42", "orders/42"},
		{"orders/42/7", "orders/42/7"},
		{"orders/", "orders/"},
		{"orders:42", "orders:42"},
		{"orders.42", "orders.42"},
		{"orders%2F42", "orders%2F42"},
		{"orders*", "orders*"},
		{"{orders}", "{orders}"},
		{"orders/_c_…-lock-…", "orders/_c_0123456789abcdef0123456789abcdef-lock-0000000001"},
		{"distlock:fence", "distlock:fence"},
		{"distlock:q:orders", "distlock:q:orders"},
		{"distlock:queue:x", "distlock:queue:x"},
		{"distlock:w:x", "distlock:w:x"},
		{"distlock:{orders}:fence", "distlock:{orders}:fence"},
		{"distlock", "distlock"},
		{"/", "/"},
		{":", ":"},
		{".", "."},
		{"..", ".."},
		{"/orders", "/orders"},
		{"a/b", "a/b"},
		{"a//b", "a//b"},
		{"a/./b", "a/./b"},
		{"a/../b", "a/../b"},
		{"a/b/", "a/b/"},
		{`\x00`, "\x00"},
		{`a\x00b`, "a\x00b"},
		{`orders\x00`, "orders\x00"},
		{`\xff\xfe`, "\xff\xfe"},
		{`orders\xc0`, "orders\xc0"},
		{`a\nb`, "a\nb"},
		{"space", " "},
		{"1 MiB", strings.Repeat("k", 1<<20)},
	}
	return keys
}

// keyRun is the state of one S34 run.
type keyRun struct {
	e              *env
	x, y           distlock.Locker // two clients: x holds the keys first, y contends
	xID, yID       int
	hold           time.Duration // TTL of every lease the scenario takes
	bound, atOnce  time.Duration // call bound; the longest a refusal may take
	control        distlock.Lease
	controlBroken  bool
	probe          contender
	probeN         int
	lastFence      uint64
	mu             sync.Mutex
	failures       []string
	refused, taken []string
}

func (r *keyRun) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// record adds an acquisition or release by client to the history, so that
// the mutex and fence oracles see the hostile keys too.
func (r *keyRun) record(client int, key string, kind OpKind, res callResult, fence uint64) {
	op := Op{Client: client, Key: key, Kind: kind, Outcome: OutcomeOK, Fence: fence, Call: res.call, Return: res.ret}
	if kind == OpAcquire {
		op.Outcome = outcomeOf(res.err)
		if res.hung || res.panicValue != nil {
			op.Outcome = OutcomeUnknown
		}
	}
	r.e.hist.Add(op)
}

// acquire makes one bounded acquisition by client (x or y) and records it.
func (r *keyRun) acquire(l distlock.Locker, client int, key string, try bool, d time.Duration) (distlock.Lease, callResult) {
	var ls distlock.Lease
	res := boundedCall(r.e.ctx, d, func(ctx context.Context) error {
		var err error
		if try {
			ls, err = l.TryAcquire(ctx, key, distlock.WithTTL(r.hold))
		} else {
			ls, err = l.Acquire(ctx, key, distlock.WithTTL(r.hold), distlock.WithRetryDelay(10*time.Millisecond, 50*time.Millisecond))
		}
		return err
	})
	if res.err != nil {
		ls = nil
	}
	var fence uint64
	if ls != nil {
		fence = ls.Fence()
	}
	r.record(client, key, OpAcquire, res, fence)
	return ls, res
}

// release ends a lease with a bounded Release and records it.
func (r *keyRun) release(ls distlock.Lease, client int) callResult {
	res := boundedCall(r.e.ctx, r.bound, ls.Release)
	r.record(client, ls.Key(), OpRelease, res, 0)
	return res
}

// checkControl: after call, the control lease x holds on a normal key must
// still be held and extend. The first failure is reported; later ones
// would only repeat it.
func (r *keyRun) checkControl(after string) {
	if r.controlBroken {
		return
	}
	if err := r.control.Err(); err != nil {
		r.controlBroken = true
		r.fail("after %s: the control lease on a normal key was lost: %s", after, cut(err.Error(), 200))
		return
	}
	// A backend that could not be reached in time (ErrUnavailable alone,
	// as a loaded host makes Redlock's node timeouts miss) has broken
	// nothing: the extension is tried again, a few times.
	var res callResult
	for try := 0; try < controlTries; try++ {
		res = boundedCall(r.e.ctx, r.bound, func(ctx context.Context) error { return r.control.Extend(ctx, r.hold) })
		if res.err == nil || res.hung || !errors.Is(res.err, distlock.ErrUnavailable) || errors.Is(res.err, distlock.ErrLeaseLost) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res.err != nil {
		r.controlBroken = true
		r.fail("after %s: extending the control lease on a normal key %s", after, res)
	}
}

// controlTries is how many times checkControl tries an extension that
// finds the backend unavailable.
const controlTries = 3

// checkProbe: after call, a fresh normal key must still be acquired, with
// a fence above the previous probe's (where fences are ordered across
// keys; with FenceScope "key" the probe reuses one key instead).
func (r *keyRun) checkProbe(after string) {
	r.probeN++
	key := fmt.Sprintf("%s-probe-%d", r.e.key, r.probeN)
	if strings.HasPrefix(r.e.g.FenceScope, "key") {
		key = r.e.key + "-probe"
	}
	g, err := r.probe.Acquire(withTimeout(r.e, r.bound), key, acquireReq{Try: true, TTL: r.e.ttl})
	if err != nil {
		r.fail("after %s: a normal key could not be acquired: %s", after, cut(err.Error(), 200))
		return
	}
	_ = r.probe.Release(r.e.ctx)
	if r.e.g.Fence != distlock.FenceNone && g.Fence <= r.lastFence {
		r.fail("after %s: a normal key got fence %d, not above the previous %d", after, g.Fence, r.lastFence)
	}
	r.lastFence = max(r.lastFence, g.Fence)
}
