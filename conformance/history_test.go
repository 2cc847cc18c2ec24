package conformance

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Times in these histories are offsets (ms) from a fixed wall-clock base.
const histBase = int64(1_700_000_000_000_000_000)

func ms(v int64) int64 { return histBase + v*int64(time.Millisecond) }

func hAcq(c int, key string, call, ret int64, fence uint64) Op {
	return Op{Client: c, Key: key, Kind: OpAcquire, Outcome: OutcomeOK, Fence: fence, Call: ms(call), Return: ms(ret)}
}

func hAcqOut(c int, key string, call, ret int64, out Outcome) Op {
	return Op{Client: c, Key: key, Kind: OpAcquire, Outcome: out, Call: ms(call), Return: ms(ret)}
}

func hRel(c int, key string, call, ret int64) Op {
	return Op{Client: c, Key: key, Kind: OpRelease, Outcome: OutcomeOK, Call: ms(call), Return: ms(ret)}
}

func hLost(c int, key string, at int64) Op {
	return Op{Client: c, Key: key, Kind: OpLost, Outcome: OutcomeOK, Call: ms(at), Return: ms(at)}
}

func wantOK(t *testing.T, name string, r CheckResult) {
	t.Helper()
	if !r.OK || r.Inconclusive || r.Visualization != "" {
		t.Fatalf("%s: want OK, got %+v", name, r)
	}
	t.Logf("%s: %v", name, r)
}

// wantFail checks the verdict, that Detail names the key, and that the
// visualization file exists in dir.
func wantFail(t *testing.T, name string, r CheckResult, key, dir string) {
	t.Helper()
	if r.OK || r.Inconclusive {
		t.Fatalf("%s: want a violation, got %+v", name, r)
	}
	if !strings.Contains(r.Detail, fmt.Sprintf("key %q", key)) {
		t.Errorf("%s: Detail does not name key %q: %s", name, key, r.Detail)
	}
	if r.Visualization == "" || filepath.Dir(r.Visualization) != dir {
		t.Fatalf("%s: visualization %q not in %s", name, r.Visualization, dir)
	}
	b, err := os.ReadFile(r.Visualization)
	if err != nil || !strings.Contains(string(b), "<html") {
		t.Fatalf("%s: visualization %s unreadable or not HTML: %v", name, r.Visualization, err)
	}
	if base := filepath.Base(r.Visualization); !strings.Contains(base, strings.ReplaceAll(key, "/", "_")) {
		t.Errorf("%s: file name %s lacks key %q", name, base, key)
	}
	t.Logf("%s: %v", name, r)
}

// TestHistoryRecorder: History records from many goroutines at once, Ops
// returns a copy, Summary counts ops and keys, and both checks accept an
// empty history.
func TestHistoryRecorder(t *testing.T) {
	var h History
	var wg sync.WaitGroup
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				h.Add(hAcq(c, []string{"a", "b", "c"}[i%3], int64(i), int64(i), 1))
				_ = h.Len()
			}
		}()
	}
	wg.Wait()
	if h.Len() != 800 {
		t.Fatalf("Len = %d", h.Len())
	}
	ops := h.Ops()
	ops[0].Key = "changed"
	if h.Ops()[0].Key == "changed" {
		t.Fatal("Ops does not return a copy")
	}
	if got := h.Summary(); got != "ops=800 keys=3" {
		t.Fatalf("Summary = %q", got)
	}
	var empty History
	wantOK(t, "empty mutex", CheckMutex(empty.Ops(), 0, ""))
	wantOK(t, "empty fence", CheckFence(nil, 0, ""))
}

// TestCheckMutexLegal: the mutex model accepts legal histories: hand-offs,
// waits, failed and unknown acquires, lost leases.
func TestCheckMutexLegal(t *testing.T) {
	cases := map[string][]Op{
		"sequential hand-offs": {
			hAcq(1, "k", 0, 10, 1), hRel(1, "k", 20, 30),
			hAcq(2, "k", 5, 40, 2), hRel(2, "k", 50, 60), // waited; returned after c1's release call
			hAcq(3, "k", 55, 70, 3), hRel(3, "k", 80, 80),
			hAcq(1, "k", 80, 90, 4), // still held at the end
		},
		"lost then another acquires": {
			hAcq(1, "k", 0, 10, 1), hLost(1, "k", 50),
			hAcq(2, "k", 20, 60, 2), hRel(2, "k", 70, 80),
		},
		"lost at the instant the other acquire returns": {
			hAcq(1, "k", 0, 10, 1), hLost(1, "k", 60), hAcq(2, "k", 20, 60, 2),
		},
		"overlapping acquires, c1 must go first": {
			hAcq(1, "k", 0, 50, 1), hAcq(2, "k", 0, 150, 2),
			hRel(1, "k", 100, 110), hRel(2, "k", 160, 170),
		},
		"overlapping acquires, c2 must go first": {
			hAcq(1, "k", 0, 150, 2), hAcq(2, "k", 0, 50, 1),
			hRel(2, "k", 100, 110), hRel(1, "k", 200, 210),
		},
		"three-way race with release concurrent to acquires": {
			hAcq(1, "k", 0, 30, 1), hAcq(2, "k", 10, 100, 2), hAcq(3, "k", 20, 200, 3),
			hRel(1, "k", 40, 120), hRel(2, "k", 130, 140), hRel(3, "k", 210, 220),
		},
		"unknown and failed outcomes": {
			hAcqOut(1, "k", 0, 100, OutcomeUnknown), // maybe took effect; c1 does not believe it
			hAcqOut(3, "k", 0, 300, OutcomeUnknown),
			hAcq(2, "k", 50, 60, 5), hAcqOut(1, "k", 110, 120, OutcomeFail),
			hRel(2, "k", 130, 140), hAcq(1, "k", 150, 160, 6), hRel(1, "k", 170, 180),
			hAcqOut(2, "k", 165, 175, OutcomeFail), hAcqOut(2, "k", 176, 177, 0), // zero outcome = unknown
		},
		"second end of a section ignored": {
			hAcq(1, "k", 0, 10, 1), hLost(1, "k", 20), hRel(1, "k", 25, 30),
			hAcq(2, "k", 15, 22, 2), hRel(2, "k", 40, 40),
		},
		"keys are independent": {
			hAcq(1, "a", 0, 10, 1), hAcq(2, "b", 0, 10, 1), hRel(1, "a", 20, 30), hRel(2, "b", 20, 30),
		},
	}
	for name, ops := range cases {
		wantOK(t, name+" (mutex)", CheckMutex(ops, time.Second, t.TempDir()))
		wantOK(t, name+" (fence)", CheckFence(ops, time.Second, t.TempDir()))
	}
}

// TestCheckMutexIllegal: the mutex model rejects histories with an
// overlap (an acquire returning before the holder's release, a lost
// notification after the next grant, a client acquiring twice), naming
// the key and writing an HTML visualization; a lost event at the instant
// the next acquire returns is legal.
func TestCheckMutexIllegal(t *testing.T) {
	cases := map[string][]Op{
		"acquire returns before holder's release call": {
			hAcq(1, "k/1", 0, 10, 1), hAcq(2, "k/1", 15, 20, 2), hRel(1, "k/1", 25, 30), hRel(2, "k/1", 40, 50),
		},
		"late lost notification": {
			hAcq(1, "k/1", 0, 10, 1), hAcq(2, "k/1", 20, 30, 2), hLost(1, "k/1", 31),
		},
		"other acquires while holder never ended": {
			hAcq(1, "k/1", 0, 10, 1), hAcq(2, "k/1", 20, 30, 2),
		},
		"same client acquires twice": {
			hAcq(1, "k/1", 0, 10, 1), hAcq(1, "k/1", 20, 30, 2),
		},
		"intruder ends early, holder releases later": {
			hAcq(1, "k/1", 0, 10, 1), hAcq(2, "k/1", 12, 14, 2), hLost(2, "k/1", 15), hRel(1, "k/1", 20, 30),
		},
	}
	for name, ops := range cases {
		dir := filepath.Join(t.TempDir(), "viz")
		r := CheckMutex(ops, time.Second, dir)
		wantFail(t, name, r, "k/1", dir)
	}
	// Boundary: closed intervals, so a lost event at the instant the other
	// acquire returns is concurrent with it and legal; 1 ms later is not.
	wantOK(t, "lost at return", CheckMutex([]Op{hAcq(1, "k", 0, 10, 1), hAcq(2, "k", 20, 30, 2), hLost(1, "k", 30)}, 0, ""))
}

// TestCheckMutexFailsWhileFenceHolds: where ME breaks while fences still
// increase, the mutex check fails and the fence check passes.
func TestCheckMutexFailsWhileFenceHolds(t *testing.T) {
	ops := []Op{
		hAcq(1, "x", 0, 10, 7), hAcq(2, "x", 20, 30, 8), hRel(2, "x", 40, 50), hRel(1, "x", 60, 70),
		hAcq(3, "x", 65, 80, 9), hLost(1, "y", 0), // a stray lost on another key is ignored
	}
	dir := t.TempDir()
	r := CheckMutex(ops, 0, dir)
	wantFail(t, "mutex", r, "x", dir)
	if !strings.Contains(r.Detail, "c2's acquire returned at") || !strings.Contains(r.Detail, "1 unmatched") {
		t.Errorf("Detail lacks the overlapping pair or the ignored op: %s", r.Detail)
	}
	wantOK(t, "fence", CheckFence(ops, 0, dir))
}

// TestCheckFence: the fenced-mutex model accepts concurrent acquires with
// fences in either order and unknown outcomes, and rejects a lower or
// equal fence after a grant and fence 0; such a history still passes the
// mutex check.
func TestCheckFence(t *testing.T) {
	legal := map[string][]Op{
		"concurrent acquires, fences in the other order": {
			hAcq(1, "f", 0, 100, 2), hAcq(2, "f", 10, 50, 1), hAcq(3, "f", 110, 120, 3),
		},
		"gaps and unknowns": {
			hAcq(1, "f", 0, 10, 3), hAcqOut(2, "f", 5, 30, OutcomeUnknown), hAcq(2, "f", 40, 50, 10),
		},
	}
	for name, ops := range legal {
		wantOK(t, name, CheckFence(ops, 0, t.TempDir()))
	}
	illegal := map[string][]Op{
		"lower fence after":     {hAcq(1, "f", 0, 10, 5), hRel(1, "f", 12, 14), hAcq(2, "f", 20, 30, 3)},
		"equal fences":          {hAcq(1, "f", 0, 10, 5), hRel(1, "f", 12, 14), hAcq(2, "f", 20, 30, 5)},
		"equal, concurrent":     {hAcq(1, "f", 0, 10, 5), hAcq(2, "f", 5, 30, 5)},
		"fence 0 never issued":  {hAcq(1, "f", 0, 10, 0)},
		"lower after, same one": {hAcq(1, "f", 0, 10, 5), hAcq(1, "f", 20, 30, 4)},
	}
	for name, ops := range illegal {
		dir := t.TempDir()
		r := CheckFence(ops, 0, dir)
		wantFail(t, name, r, "f", dir)
		if !strings.Contains(r.Detail, "fence") {
			t.Errorf("%s: %s", name, r.Detail)
		}
	}
	// Fences out of order but ME holds: CheckMutex passes.
	ops := illegal["lower fence after"]
	wantOK(t, "mutex on fence-broken history", CheckMutex(ops, 0, ""))
}

// genHistory simulates a correct lock: per key, hand-offs among clients
// whose acquires wait (overlap the previous section), with failed and
// unknown acquires, releases and lost events. If breakAt >= 0, that
// hand-off on key "k0" returns inside the previous holder's section
// (ME breaks, fences still increase); if swapFence, two successive fences
// on "k0" are swapped (FENCE breaks, ME holds).
func genHistory(seed int64, keys, clients, handoffs, breakAt int, swapFence bool) []Op {
	rng := rand.New(rand.NewSource(seed))
	us := func(n int) int64 { return int64(1+rng.Intn(n)) * int64(time.Microsecond) }
	var ops []Op
	for k := 0; k < keys; k++ {
		key := fmt.Sprintf("k%d", k)
		last := make(map[int]int64) // per client: last return on this key
		t := histBase
		var fence uint64
		holder := -1
		var prevAcqRet int64
		prevAcq := -1
		for i := 0; i < handoffs; i++ {
			c := rng.Intn(clients)
			for c == holder {
				c = rng.Intn(clients)
			}
			p := max(t+us(200), last[c]+2) // linearization point of the acquire
			call := max(last[c]+1, p-us(3000))
			ret := p + us(300)
			swap := swapFence && k == 0 && i == handoffs/2
			if swap {
				call = max(call, prevAcqRet+1) // starts after the previous acquire returned
			}
			if k == 0 && i == breakAt && holder >= 0 {
				p = prevAcqRet + 1 // granted while the holder still holds
				call, ret = min(call, p), p+1
			}
			fence += uint64(1 + rng.Intn(3))
			ops = append(ops, Op{Client: c, Key: key, Kind: OpAcquire, Outcome: OutcomeOK, Fence: fence, Call: call, Return: ret})
			if swap {
				ops[len(ops)-1].Fence, ops[prevAcq].Fence = ops[prevAcq].Fence, ops[len(ops)-1].Fence
			}
			prevAcq = len(ops) - 1
			endCall := ret + us(1000)
			end := endCall + us(300)
			if rng.Intn(10) == 0 {
				ops = append(ops, Op{Client: c, Key: key, Kind: OpLost, Outcome: OutcomeOK, Call: endCall, Return: endCall})
				end = endCall
			} else {
				ops = append(ops, Op{Client: c, Key: key, Kind: OpRelease, Outcome: OutcomeOK, Call: endCall, Return: end})
			}
			last[c] = end
			// Others try meanwhile and fail, or time out with unknown effect.
			for j := 0; j < 2; j++ {
				o := rng.Intn(clients)
				if o == c {
					continue
				}
				oc := max(last[o]+1, ret+us(500))
				out := OutcomeFail
				if rng.Intn(20) == 0 {
					out = OutcomeUnknown
				}
				ops = append(ops, Op{Client: o, Key: key, Kind: OpAcquire, Outcome: out, Call: oc, Return: oc + us(400)})
				last[o] = oc + us(400)
			}
			holder, prevAcqRet, t = c, ret, endCall
		}
	}
	rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
	return ops
}

// TestCheckHistoryManyKeys: both checks accept a generated correct
// history of about 10k operations over 100 keys and one of a single hot
// key, and a check cut short by its timeout is inconclusive.
func TestCheckHistoryManyKeys(t *testing.T) {
	ops := genHistory(1, 100, 8, 25, -1, false) // 100 keys x 25 hand-offs x ~4 ops = ~10k ops
	if len(ops) < 9000 {
		t.Fatalf("generated only %d ops", len(ops))
	}
	for _, c := range []struct {
		name  string
		check func([]Op, time.Duration, string) CheckResult
	}{{"mutex", CheckMutex}, {"fence", CheckFence}} {
		start := time.Now()
		r := c.check(ops, 0, t.TempDir())
		wantOK(t, c.name, r)
		t.Logf("%s: %d ops recorded, %d checked, in %v (speed: BenchmarkCheckHistory10k)", c.name, len(ops), r.Ops, time.Since(start))
	}
	// One hot key with many hand-offs.
	hot := genHistory(2, 1, 10, 2500, -1, false)
	start := time.Now()
	wantOK(t, "hot key mutex", CheckMutex(hot, 0, ""))
	wantOK(t, "hot key fence", CheckFence(hot, 0, ""))
	t.Logf("hot key: %d ops, both checks in %v", len(hot), time.Since(start))
	// A timeout far shorter than the check is reported as inconclusive.
	if r := CheckMutex(hot, time.Nanosecond, ""); r.OK || !r.Inconclusive || r.Visualization != "" {
		t.Fatalf("1ns timeout: want inconclusive, got %+v", r)
	} else {
		t.Logf("1ns timeout: %v", r)
	}
}

// TestCheckHistoryInjectedFaults: the same generated history with one
// injected fault among 10k operations fails the matching check only (an
// overlap the mutex check, two swapped fences the fence check).
func TestCheckHistoryInjectedFaults(t *testing.T) {
	dir := t.TempDir()
	overlap := genHistory(3, 100, 8, 25, 12, false)
	wantFail(t, "overlap (mutex)", CheckMutex(overlap, 0, dir), "k0", dir)
	wantOK(t, "overlap (fence)", CheckFence(overlap, 0, dir))
	swapped := genHistory(4, 100, 8, 25, -1, true)
	wantFail(t, "swapped fences (fence)", CheckFence(swapped, 0, dir), "k0", dir)
	wantOK(t, "swapped fences (mutex)", CheckMutex(swapped, 0, dir))
}

// BenchmarkCheckHistory10k: both history checks over about 10k operations
// on 100 keys; partitioned by key, the target is under 100 ms for about
// 10k operations. Reported, not asserted.
func BenchmarkCheckHistory10k(b *testing.B) {
	ops := genHistory(1, 100, 8, 25, -1, false)
	for _, c := range []struct {
		name  string
		check func([]Op, time.Duration, string) CheckResult
	}{{"mutex", CheckMutex}, {"fence", CheckFence}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportMetric(float64(len(ops)), "ops/history")
			for i := 0; i < b.N; i++ {
				if r := c.check(ops, 0, ""); !r.OK {
					b.Fatalf("%s: %s", c.name, r.Detail)
				}
			}
		})
	}
}
