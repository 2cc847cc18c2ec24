package redlock

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// A lease's fence is the largest counter among the nodes that granted it.
// It is handed out only once a majority of nodes have a counter at or
// above it: any later majority then shares a node with that one, whose
// INCR gives the next holder a higher fence, even if this holder pauses or
// crashes right after Acquire returns.

// testHookBeforeWriteBack runs in attempt after a majority granted the
// key, before the fence write-back (nil in production; tests set it).
var testHookBeforeWriteBack func()

// raiseFence puts the fence of an acquisition that a majority granted on a
// majority of nodes: it raises (counter = max(counter, fence)) the
// counters of the granting nodes that are below fence, in one multiplexed
// round trip with a deadline of its own, nt from now (the acquisition's
// deadline may have passed while the client read the replies or was
// descheduled), and waits for the replies. counters holds each granting
// node's counter after its INCR (0: the node did not grant). It returns
// how many nodes are known to have a counter at or above fence, the
// nodes whose raise failed, and whether any granting node was below fence
// (then Extend and Release raise the counters again: a node that lagged
// may have lost its counter, and may lose it again). If every granting
// node already has fence, it does no I/O.
func (l *Locker) raiseFence(ctx context.Context, k keys, counters []int64, fence int64, nt time.Duration) (held int, fails []NodeError, below bool) {
	lower := func(i int) bool { return counters[i] > 0 && counters[i] < fence }
	need := false
	for i, v := range counters {
		if v >= fence {
			held++
		}
		need = need || lower(i)
	}
	if !need {
		return held, nil, false
	}
	below = true
	cmd := []string{"EVALSHA", fenceScript.sha, "2", k.lock, k.fence, strconv.FormatInt(fence, 10)}
	res := l.fanoutOne(ctx, time.Now().Add(nt), func(i int) []string {
		if lower(i) {
			return cmd
		}
		return nil
	}, nil)
	for i, r := range res {
		switch {
		case !lower(i):
		case r.err != nil:
			fails = append(fails, NodeError{l.nodes[i].addr, unavailable(fmt.Errorf("fence write-back: %w", r.err))})
		default:
			held++
		}
	}
	return held, fails, below
}

// fenceArg is the fence Extend and Release write back: "0" (none) unless
// some granting node's counter was below it at acquisition.
func (d *driver) fenceArg() string {
	if !d.wb {
		return "0"
	}
	return strconv.FormatInt(d.fence, 10)
}
