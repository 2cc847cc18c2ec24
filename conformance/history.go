package conformance

// The history oracle: porcupine checks recorded lock operations, per key,
// against a mutex model (ME as clients believe it) and a fence model (FENCE).

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// OpKind is what a recorded operation did.
type OpKind int

const (
	OpAcquire OpKind = iota + 1 // Acquire/TryAcquire
	OpRelease                   // the holder's section ended by Release (whatever Release returned)
	OpLost                      // the holder learned its lease was lost (Done fired) before it released; Call == Return == the moment it learned
)

// String names the kind.
func (k OpKind) String() string { return enumName(int(k), "acquire", "release", "lost") }

// Outcome of an acquire.
type Outcome int

const (
	OutcomeOK      Outcome = iota + 1 // acquired
	OutcomeFail                       // definitely not acquired (ErrNotAcquired, invalid arg)
	OutcomeUnknown                    // error with unknown effect (timeout, ErrUnavailable): may or may not have taken effect
)

// String names the outcome.
func (o Outcome) String() string { return enumName(int(o), "ok", "fail", "unknown") }

func enumName(v int, names ...string) string {
	if v >= 1 && v <= len(names) {
		return names[v-1]
	}
	return fmt.Sprint(v)
}

// Op is one recorded operation. Call is stamped before the request is sent
// and Return after the reply (unix nanoseconds), so intervals only widen.
type Op struct {
	Client       int // a client id; one client holds at most one lease per key at a time
	Key          string
	Kind         OpKind
	Outcome      Outcome // for OpAcquire; OK for others
	Fence        uint64  // for OpAcquire OK
	Call, Return int64   // unix nanos
}

// History is a concurrency-safe recorder. The zero value is ready to use.
type History struct {
	mu  sync.Mutex
	ops []Op
}

// Add records op.
func (h *History) Add(op Op) { h.mu.Lock(); h.ops = append(h.ops, op); h.mu.Unlock() }

// Ops returns a copy of the recorded operations.
func (h *History) Ops() []Op { h.mu.Lock(); defer h.mu.Unlock(); return append([]Op(nil), h.ops...) }

// Len is the number of recorded operations.
func (h *History) Len() int { h.mu.Lock(); defer h.mu.Unlock(); return len(h.ops) }

// Summary is a one-line description: "ops=N keys=K".
func (h *History) Summary() string {
	ops := h.Ops()
	keys := make(map[string]bool)
	for _, op := range ops {
		keys[op.Key] = true
	}
	return fmt.Sprintf("ops=%d keys=%d", len(ops), len(keys))
}

// CheckResult is the verdict of one model check.
type CheckResult struct {
	OK            bool   // linearizable under the model
	Inconclusive  bool   // the checker timed out (then OK is false)
	Ops           int    // operations given to the checker (after normalization, see Detail)
	Detail        string // human-readable: which key/partition failed, short description
	Visualization string // path of the porcupine HTML written on failure ("" if none)
}

// String is the detail and the visualization path.
func (r CheckResult) String() string { return strings.TrimSpace(r.Detail + " " + r.Visualization) }

const (
	// DefaultCheckTimeout bounds a check when the caller passes timeout <= 0.
	DefaultCheckTimeout = 10 * time.Second
	maxHistoryViz       = 3           // failing keys re-checked and visualized
	histNoHolder        = math.MinInt // mutex model state: free
)

func describeHistOp(in, _ any) string {
	switch i := in.(Op); {
	case i.Kind != OpAcquire:
		return fmt.Sprintf("c%d %v", i.Client, i.Kind)
	case i.Outcome == OutcomeOK:
		return fmt.Sprintf("c%d acquire -> ok fence=%d", i.Client, i.Fence)
	default:
		return fmt.Sprintf("c%d acquire -> %v", i.Client, i.Outcome)
	}
}

// partitionByKey groups ops by key; partition i is the i-th key in order.
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := make(map[string][]porcupine.Operation)
	for _, op := range history {
		k := op.Input.(Op).Key
		byKey[k] = append(byKey[k], op)
	}
	var parts [][]porcupine.Operation
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		parts = append(parts, byKey[k])
	}
	return parts
}

// mutexModel: per key the state is the holder's client id. Acquire OK is
// legal only if the lock is free; Release/Lost only by the holder, freeing
// it. Acquire Fail/Unknown has no effect: a holder nobody believes in cannot
// break ME as clients believe it (and the library cleans up a failed
// acquire). Nondeterministic so that outcomes can branch.
func mutexModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partitionByKey,
		Init:      func() []any { return []any{histNoHolder} },
		Step: func(state, in, _ any) []any {
			h, i := state.(int), in.(Op)
			switch {
			case i.Kind == OpAcquire && i.Outcome == OutcomeOK && h == histNoHolder:
				return []any{i.Client}
			case i.Kind == OpAcquire && i.Outcome != OutcomeOK:
				return []any{h}
			case i.Kind != OpAcquire && h == i.Client:
				return []any{histNoHolder}
			}
			return nil
		},
		Hash:              func(s any) uint64 { return uint64(s.(int)) * 0x9E3779B97F4A7C15 },
		DescribeOperation: describeHistOp,
		DescribeState: func(s any) string {
			if s.(int) == histNoHolder {
				return "free"
			}
			return fmt.Sprintf("held by c%d", s.(int))
		},
	}
	return nm.ToModel()
}

// fenceModel: per key the state is the highest fence seen; an acquire OK is
// legal only with a greater fence.
func fenceModel() porcupine.Model {
	return porcupine.Model{
		Partition: partitionByKey,
		Init:      func() any { return uint64(0) },
		Step: func(state, in, _ any) (bool, any) { // only OK acquires reach it
			m, f := state.(uint64), in.(Op).Fence
			return f > m, max(m, f)
		},
		Hash:              func(s any) uint64 { return s.(uint64) },
		DescribeOperation: describeHistOp,
		DescribeState:     func(s any) string { return fmt.Sprintf("max fence %d", s.(uint64)) },
	}
}

// histNotes counts what normalization dropped or repaired.
type histNotes map[string]int

func (n histNotes) String() string {
	var parts []string
	for k, v := range n {
		parts = append(parts, fmt.Sprintf("%d %s", v, k))
	}
	slices.Sort(parts)
	return strings.TrimSuffix(" ("+strings.Join(parts, ", ")+")", " ()")
}

// normalizeOps sorts ops by Call, drops ops of unknown kind and repairs
// inverted intervals; then drop returns why to leave an op out ("" keeps it).
func normalizeOps(ops []Op, drop func(Op) string) ([]porcupine.Operation, histNotes) {
	n := histNotes{}
	ops = slices.Clone(ops)
	slices.SortStableFunc(ops, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) })
	hist := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		if op.Kind < OpAcquire || op.Kind > OpLost {
			n["ops of unknown kind dropped"]++
			continue
		}
		if op.Return < op.Call {
			n["inverted intervals set to Return=Call"]++
			op.Return = op.Call
		}
		if why := drop(op); why != "" {
			n[why]++
			continue
		}
		hist = append(hist, porcupine.Operation{ClientId: op.Client, Input: op, Call: op.Call, Return: op.Return})
	}
	return hist, n
}

// CheckMutex checks ME as clients believe it: a mutex model per key. A
// section ends at the holder's Release or Lost op; one never ended is still
// held at the end of the history, which is fine. Failed acquires are left
// out (no effect), and so is a Release/Lost that does not end an open
// acquisition of its client (e.g. Release after Lost); Detail counts them.
// An acquire outcome other than OK or Fail counts as Unknown.
func CheckMutex(ops []Op, timeout time.Duration, vizDir string) CheckResult {
	open := make(map[Op]bool) // by {Client, Key}: an acquisition is open
	hist, n := normalizeOps(ops, func(op Op) string {
		c := Op{Client: op.Client, Key: op.Key}
		switch {
		case op.Kind == OpAcquire && op.Outcome == OutcomeFail:
			return "failed acquires ignored"
		case op.Kind == OpAcquire:
			open[c] = open[c] || op.Outcome == OutcomeOK
		case open[c]:
			open[c] = false
		default:
			return "unmatched release/lost ignored"
		}
		return ""
	})
	return checkHistory("mutex", mutexModel(), hist, n, mutexHint, timeout, vizDir)
}

// CheckFence checks FENCE: per key, OK acquires' fences strictly increase in
// an order consistent with real time. Only OK acquires are checked.
func CheckFence(ops []Op, timeout time.Duration, vizDir string) CheckResult {
	hist, n := normalizeOps(ops, func(op Op) string {
		if op.Kind != OpAcquire || op.Outcome != OutcomeOK {
			return "other ops ignored"
		}
		return ""
	})
	return checkHistory("fence", fenceModel(), hist, n, fenceHint, timeout, vizDir)
}

func checkHistory(name string, model porcupine.Model, hist []porcupine.Operation, n histNotes,
	hint func([]porcupine.Operation) string, timeout time.Duration, vizDir string) CheckResult {
	timeout = cmp.Or(max(timeout, 0), DefaultCheckTimeout)
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(model, hist, timeout)
	took := time.Since(start).Round(time.Microsecond)
	parts := partitionByKey(hist) // the checker's partitions, in its order
	stats := fmt.Sprintf("%d ops, %d keys, %v%v", len(hist), len(parts), took, n)
	switch res {
	case porcupine.Ok:
		return CheckResult{OK: true, Ops: len(hist), Detail: name + ": linearizable: " + stats}
	case porcupine.Unknown:
		return CheckResult{Inconclusive: true, Ops: len(hist),
			Detail: fmt.Sprintf("%s: inconclusive (checker timed out after %v): %s", name, timeout, stats)}
	}
	r := CheckResult{Ops: len(hist)}
	// Illegal: a partition without a complete linearization failed (or was
	// cut short by the timeout); re-check it alone to confirm, and write a
	// visualization of that key only.
	var failed []string
	for p, part := range parts {
		key := part[0].Input.(Op).Key
		if slices.ContainsFunc(info.PartialLinearizations()[p], func(l []int) bool { return len(l) == len(part) }) {
			continue
		} else if len(failed) >= maxHistoryViz {
			failed = append(failed, fmt.Sprintf("key %q (not re-checked)", key))
			continue
		}
		pres, pinfo := porcupine.CheckOperationsVerbose(model, denseClients(part), timeout)
		msg := fmt.Sprintf("key %q (%d ops): %s", key, len(part), hint(part))
		if pres == porcupine.Ok {
			continue // cut short by the timeout, not illegal
		} else if pres == porcupine.Unknown {
			msg += " (re-check timed out)"
		} else if path, err := writeHistoryViz(vizDir, name, key, model, pinfo); err != nil {
			msg += "; visualization: " + err.Error()
		} else if r.Visualization == "" {
			r.Visualization = path
		}
		failed = append(failed, msg)
	}
	r.Detail = fmt.Sprintf("%s: NOT linearizable (%s): %s", name, stats, strings.Join(failed, "; "))
	return r
}

// denseClients renumbers ClientId 0..n-1 in client order for the
// visualization (one row per id up to the largest); descriptions keep the
// real ids.
func denseClients(part []porcupine.Operation) []porcupine.Operation {
	var ids []int
	for _, op := range part {
		ids = append(ids, op.ClientId)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	out := append([]porcupine.Operation(nil), part...)
	for i := range out {
		out[i].ClientId, _ = slices.BinarySearch(ids, out[i].ClientId)
	}
	return out
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9.-]`)

func writeHistoryViz(dir, model, key string, m porcupine.Model, info porcupine.LinearizationInfo) (string, error) {
	dir = cmp.Or(dir, os.TempDir())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	safe := unsafeFileChars.ReplaceAllString(key, "_")
	f, err := os.CreateTemp(dir, fmt.Sprintf("porcupine-%s-%s-*.html", model, safe[:min(len(safe), 64)]))
	if err != nil {
		return "", err
	}
	return f.Name(), errors.Join(porcupine.Visualize(m, info, f), f.Close())
}

func relTime(t, base int64) string { return "+" + time.Duration(t-base).String() }

// opsOf returns a partition's ops, in Call order as normalizeOps sorted them.
func opsOf(part []porcupine.Operation) []Op {
	ops := make([]Op, len(part))
	for i, o := range part {
		ops[i] = o.Input.(Op)
	}
	return ops
}

// mutexHint names two sections of one key that definitely overlap: the
// later acquire returned before the earlier holder's section ended.
func mutexHint(part []porcupine.Operation) string {
	type section struct {
		acq Op
		end int64
		how string
	}
	ops := opsOf(part)
	base := ops[0].Call
	var secs []section
	open := make(map[int]int) // client -> index+1 in secs
	for _, op := range ops {
		switch j := open[op.Client]; {
		case op.Kind == OpAcquire && op.Outcome == OutcomeOK: // a second one overlaps the first
			secs = append(secs, section{op, math.MaxInt64, "never ended"})
			open[op.Client] = len(secs)
		case op.Kind != OpAcquire && j > 0:
			secs[j-1].end, secs[j-1].how = op.Call, fmt.Sprintf("ended by %v at %s", op.Kind, relTime(op.Call, base))
			open[op.Client] = 0
		}
	}
	slices.SortStableFunc(secs, func(a, b section) int { return cmp.Compare(a.acq.Return, b.acq.Return) })
	p := -1 // the earlier section that ends last
	for i, s := range secs {
		if q := secs[max(p, 0)]; p >= 0 && s.acq.Return < q.end {
			return fmt.Sprintf("c%d's acquire returned at %s while c%d (acquired at %s) still held the lock (%s)",
				s.acq.Client, relTime(s.acq.Return, base), q.acq.Client, relTime(q.acq.Return, base), q.how)
		}
		if p < 0 || s.end > secs[p].end {
			p = i
		}
	}
	return "no two sections definitely overlap, but no order of the intervals fits a mutex"
}

// fenceHint names an acquire that returned before another started yet got
// a fence at least as high.
func fenceHint(part []porcupine.Operation) string {
	byCall := opsOf(part)
	byRet := slices.SortedStableFunc(slices.Values(byCall), func(a, b Op) int { return cmp.Compare(a.Return, b.Return) })
	base, j := byCall[0].Call, 0
	var best *Op // highest fence among acquires returned before b started
	for _, b := range byCall {
		for ; j < len(byRet) && byRet[j].Return < b.Call; j++ {
			if best == nil || byRet[j].Fence > best.Fence {
				best = &byRet[j]
			}
		}
		if b.Fence == 0 {
			return fmt.Sprintf("c%d's acquire at %s got fence 0", b.Client, relTime(b.Call, base))
		}
		if best != nil && best.Fence >= b.Fence {
			return fmt.Sprintf("c%d got fence %d (acquire returned at %s) before c%d's acquire started (%s), which got fence %d",
				best.Client, best.Fence, relTime(best.Return, base), b.Client, relTime(b.Call, base), b.Fence)
		}
	}
	return "no single pair is out of order, but no order of the intervals gives increasing fences"
}
