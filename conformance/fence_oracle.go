package conformance

// The fence oracle: every scenario's history is checked over all fences
// handed out, not only over the writes a fenced resource accepted. Per
// key, successive holders' fences must strictly increase in grant order
// wherever the backend promises ordered fences, and no fence may be handed
// to two acquisitions of the key.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock"
)

// FenceVerdict is the fence oracle's judgement of one history.
type FenceVerdict struct {
	Checked      bool   // false: the promise does not cover this history (see Detail)
	OK           bool   // no violation found (true when not checked)
	Inconclusive bool   // the order check timed out
	Grants       int    // successful acquisitions seen
	Detail       string // the first violation, or why nothing was checked
}

// CheckFences judges the fences of every successful acquisition in ops
// against what kind promises. lostAt (unix nanos; 0: never) is when a
// server was first killed or failed over during the history:
// FenceMonotonic promises nothing across that (its counters may restart or
// lag), so only the operations that returned before it are checked;
// FenceDurable still promises everything. With FenceNone only uniqueness
// is checked.
func CheckFences(ops []Op, kind distlock.FenceKind, lostAt int64, timeout time.Duration) (v FenceVerdict) {
	countGrants := func(ops []Op) int {
		n := 0
		for _, op := range ops {
			if op.Kind == OpAcquire && op.Outcome == OutcomeOK {
				n++
			}
		}
		return n
	}
	grants := countGrants(ops)
	v = FenceVerdict{OK: true, Grants: grants}
	cutOff := lostAt != 0 && kind != distlock.FenceDurable
	if cutOff {
		ops = slices.DeleteFunc(slices.Clone(ops), func(op Op) bool { return op.Return >= lostAt })
	}
	if cutOff && countGrants(ops) == 0 {
		v.Detail = fmt.Sprintf("not checked: a server lost its state before any grant and fences are %v", kind)
		return v
	}
	v.Checked = true
	defer func() {
		if cutOff {
			v.Detail += fmt.Sprintf(" (up to the first state loss; fences are %v)", kind)
		}
	}()
	if dup := reusedFence(ops); dup != "" {
		v.OK, v.Detail = false, dup
		return v
	}
	if kind == distlock.FenceNone {
		v.Detail = fmt.Sprintf("%d grants, fences unique (no order promised)", grants)
		return v
	}
	r := CheckFence(ops, timeout, vizDir())
	switch {
	case r.Inconclusive:
		v.Inconclusive, v.Detail = true, r.Detail
	case !r.OK:
		v.OK, v.Detail = false, r.Detail+viz(r)
	default:
		v.Detail = fmt.Sprintf("%d grants, fences unique and increasing in grant order", grants)
	}
	return v
}

// reusedFence names the first fence handed to two acquisitions of one
// key, or returns "".
func reusedFence(ops []Op) string {
	type fenceOf struct {
		key   string
		fence uint64
	}
	var grants []Op
	for _, op := range ops {
		if op.Kind == OpAcquire && op.Outcome == OutcomeOK {
			grants = append(grants, op)
		}
	}
	slices.SortStableFunc(grants, func(a, b Op) int { return cmp.Compare(a.Return, b.Return) })
	first := make(map[fenceOf]Op, len(grants))
	for _, g := range grants {
		k := fenceOf{g.Key, g.Fence}
		if p, ok := first[k]; ok {
			return fmt.Sprintf("fence %d of key %s handed out twice: to c%d (acquire returned at %s) and to c%d (returned at %s)",
				g.Fence, quoteShort(g.Key), p.Client, relTime(p.Return, grants[0].Call), g.Client, relTime(g.Return, grants[0].Call))
		}
		first[k] = g
	}
	return ""
}

// judgeFences applies the fence oracle to the scenario's history and folds
// its verdict into obs. A violation fails a scenario expected to hold or
// measure; where a different limitation is documented (breaks), it is a
// failure that limitation does not excuse, since the oracle already skips
// histories in which the fence promise lapses (state loss).
func (e *env) judgeFences(exp expectation, obs observation, lostAt int64) observation {
	v := CheckFences(e.hist.Ops(), e.g.Fence, lostAt, 20*time.Second)
	if v.Grants == 0 {
		return obs
	}
	note := "fence oracle: " + v.Detail
	switch {
	case v.OK && v.Inconclusive:
		obs.inconclusive = true
		obs.detail = joinDetail(obs.detail, note)
	case v.OK:
		obs.detail = joinDetail(obs.detail, note)
	case exp.kind == "breaks":
		obs.unrelated = true
		obs.detail = joinDetail(note, obs.detail)
	default:
		obs.held, obs.inconclusive = false, false
		obs.detail = joinDetail(note, obs.detail)
	}
	return obs
}

func joinDetail(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// stateWatch records when a scenario first killed or failed over a
// server, after which FenceMonotonic fences may go back as documented.
type stateWatch struct{ lostAt atomic.Int64 } // unix nanos; 0: never

// lose records the first state loss.
func (w *stateWatch) lose() { w.lostAt.CompareAndSwap(0, time.Now().UnixNano()) }

// watch returns a copy of h whose Servers and Failover mark w when a
// server is killed or failed over; everything else is h's.
func (w *stateWatch) watch(h *Harness) *Harness {
	hh := *h
	hh.Servers = make([]Server, len(h.Servers))
	for i, s := range h.Servers {
		hh.Servers[i] = watchedServer{Server: s, w: w}
	}
	if h.Failover != nil {
		hh.Failover = func(ctx context.Context) error {
			w.lose()
			return h.Failover(ctx)
		}
	}
	return &hh
}

// watchedServer marks its watch when killed.
type watchedServer struct {
	Server
	w *stateWatch
}

func (s watchedServer) Kill(ctx context.Context) error {
	s.w.lose()
	return s.Server.Kill(ctx)
}

// quoteShort quotes a key for a message, cut after 40 bytes.
func quoteShort(s string) string {
	const limit = 40
	if len(s) <= limit {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:limit], len(s))
}
