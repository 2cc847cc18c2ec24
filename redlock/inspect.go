package redlock

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/distlock/distlock"
)

var _ distlock.Inspector = (*Locker)(nil)

// The scripts of inspection, sent with EVAL rather than loaded on every
// connection as the scripts of the lock's life are: an operator's call
// pays for its script text, an acquisition pays nothing for them.
var (
	inspectScript = newScript("inspect")
	forceScript   = newScript("force")
)

// nodeState is one node's reading of one lock (lua/inspect.lua).
type nodeState struct {
	typ     string // "none", "string", or another Redis type
	pttl    int64  // -2: no key, -1: no expiry
	waiters int
	value   string // the token, for a string
}

// Inspect implements distlock.Inspector: one multiplexed round trip to
// every node, each bounded by the node timeout of the Locker's default
// TTL (Options.NodeTimeout), which reads the lock key's type, value and
// PTTL and the length of its wait queue. LockInfo.Nodes[i] is node i's
// view (see Inspection in the package documentation); the other fields
// are the quorum view. A node that did not answer has the zero LockInfo
// (Key "") in Nodes. If fewer than a majority answered, the error is a
// *QuorumError matching distlock.ErrUnavailable (and ctx's error if ctx
// ended) naming each silent node, and the LockInfo holds only Key and
// Nodes. An empty key, or one no acquisition of this Locker accepts,
// returns an error matching distlock.ErrInvalidArgument; after Close,
// distlock.ErrClosed.
func (l *Locker) Inspect(ctx context.Context, key string) (distlock.LockInfo, error) {
	if err := l.enterInspect(key); err != nil {
		return distlock.LockInfo{}, err
	}
	defer l.lc.Leave()
	st, errs := l.read(ctx, []string{key})
	info := l.view(key, column(st, 0))
	if err := l.quorumErr(ctx, "inspect", key, errs); err != nil {
		return distlock.LockInfo{Key: key, Nodes: info.Nodes}, err
	}
	return info, nil
}

// ForceRelease implements distlock.Inspector in two multiplexed round
// trips, each bounded as Inspect's: it reads every node's lock key as
// Inspect does, then deletes it on every node (not only a majority) where
// it still holds what was read, and wakes the next waiter there as a
// release does; a node that did not answer the read is sent the delete of
// each value the other nodes hold. A holder that took the key between the
// two round trips is left alone, and a delete that reaches a node late
// can only delete what was read. Fence counters are untouched, so the
// next holder's fence is higher. The evicted lease is not told: its Done
// fires at its own deadline (or when its watchdog's next extension finds
// the key gone), its Extend and Release fail with distlock.ErrLeaseLost. It reports whether a majority held one token
// (LockInfo.Held). If fewer than a majority answered both round trips (a
// node with no lock key needs only the read), the key is deleted where it
// could be, and the error is a *QuorumError matching
// distlock.ErrUnavailable naming the count and each silent node. Other
// errors as for Inspect.
func (l *Locker) ForceRelease(ctx context.Context, key string) (bool, error) {
	if err := l.enterInspect(key); err != nil {
		return false, err
	}
	defer l.lc.Leave()
	st, errs := l.read(ctx, []string{key})
	col := column(st, 0)
	held := l.view(key, col).Held
	k := l.keysFor(key)
	del := func(s nodeState) []string {
		return []string{"EVAL", forceScript.src, "2", k.lock, k.queue, s.typ, s.value}
	}
	var seen []nodeState // the distinct states read, for the silent nodes
	for _, s := range col {
		if s != nil && s.typ != "none" && !slices.ContainsFunc(seen, func(o nodeState) bool { return o.typ == s.typ && o.value == s.value }) {
			seen = append(seen, *s)
		}
	}
	cmds := make([][][]string, len(l.nodes))
	for i, s := range col {
		switch {
		case s == nil:
			for _, o := range seen {
				cmds[i] = append(cmds[i], del(o))
			}
		case s.typ != "none":
			cmds[i] = [][]string{del(*s)}
		}
	}
	res, conns := l.fanout(ctx, time.Now().Add(l.inspectTimeout()), func(i int) [][]string { return cmds[i] }, nil)
	l.done(conns)
	for i := range res {
		switch {
		case cmds[i] == nil: // nothing there, or nothing known to delete: errs[i] stands
		case res[i].err != nil:
			errs[i] = res[i].err
		default:
			errs[i] = nil
		}
	}
	return held, l.quorumErr(ctx, "force release", key, errs)
}

// enterInspect checks key as an acquisition does (distlock.CheckKey, then
// checkKey) and registers the call with the lifecycle; a nil error must
// be matched by l.lc.Leave.
func (l *Locker) enterInspect(key string) error {
	if err := distlock.CheckKey(key); err != nil {
		return err
	}
	if err := l.checkKey(key); err != nil {
		return err
	}
	if !l.lc.Enter() {
		return distlock.ErrClosed
	}
	return nil
}

// inspectTimeout is the node timeout of an inspection round trip: that
// of the Locker's default TTL.
func (l *Locker) inspectTimeout() time.Duration { return l.opts.nodeTimeout(l.opts.Lock.TTL) }

// read runs lua/inspect.lua for keys on every node in one multiplexed
// round trip. st[i] is node i's reading of each key, nil if errs[i] (its
// transport error, error reply or malformed reply) is not nil.
func (l *Locker) read(ctx context.Context, keys []string) (st [][]nodeState, errs []error) {
	cmd := make([]string, 0, 3+2*len(keys))
	cmd = append(cmd, "EVAL", inspectScript.src, strconv.Itoa(2*len(keys)))
	for _, key := range keys {
		k := l.keysFor(key)
		cmd = append(cmd, k.lock, k.queue)
	}
	res := l.fanoutOne(ctx, time.Now().Add(l.inspectTimeout()), func(int) []string { return cmd }, nil)
	st, errs = make([][]nodeState, len(res)), make([]error, len(res))
	for i, r := range res {
		if errs[i] = r.err; r.err == nil {
			st[i], errs[i] = parseStates(r.v, len(keys))
		}
	}
	return st, errs
}

// parseStates decodes lua/inspect.lua's reply for n keys.
func parseStates(v any, n int) ([]nodeState, error) {
	vs, ok := v.([]any)
	if !ok || len(vs) != 4*n {
		return nil, fmt.Errorf("inspect: unexpected reply %T of %d values for %d keys", v, len(vs), n)
	}
	out := make([]nodeState, n)
	for j := range out {
		typ, ok1 := vs[4*j].(string)
		pttl, ok2 := vs[4*j+1].(int64)
		w, ok3 := vs[4*j+2].(int64)
		val, ok4 := vs[4*j+3].(string)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return nil, fmt.Errorf("inspect: unexpected reply for key %d", j)
		}
		out[j] = nodeState{typ: typ, pttl: pttl, waiters: int(w), value: val}
	}
	return out, nil
}

// column returns every node's reading of the j-th key (nil: no answer).
func column(st [][]nodeState, j int) []*nodeState {
	out := make([]*nodeState, len(st))
	for i, s := range st {
		if s != nil {
			out[i] = &s[j]
		}
	}
	return out
}

// quorumErr returns nil if a majority of errs are nil, else a
// *QuorumError for op naming each failed node, joined with ctx's cause if
// ctx has ended.
func (l *Locker) quorumErr(ctx context.Context, op, key string, errs []error) error {
	answered := 0
	var fails []NodeError
	for i, err := range errs {
		if err == nil {
			answered++
			continue
		}
		fails = append(fails, NodeError{l.nodes[i].addr, unavailable(err)})
	}
	if answered >= l.quorum {
		return nil
	}
	var err error = &QuorumError{Op: op, Key: key, Nodes: fails, Acquired: answered, Needed: l.quorum}
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (%w)", err, context.Cause(ctx))
	}
	return err
}

// info is node's view of key.
func (s *nodeState) info(key string) distlock.LockInfo {
	n := distlock.LockInfo{Key: key, Waiters: s.waiters}
	if s.typ == "none" {
		return n
	}
	n.Held = true // the node refuses the key to anyone
	switch {
	case s.pttl == -1:
		n.TTL = distlock.NoExpiry
	case s.pttl >= 0:
		n.TTL = time.Duration(max(s.pttl, 1)) * time.Millisecond
	}
	var leak []string
	switch {
	case s.typ != "string":
		leak = append(leak, "the lock key holds a "+s.typ+", not a token")
	case s.value == "":
		leak = append(leak, "the lock key holds an empty value, not a token")
	default:
		n.Holder = distlock.HolderID(s.value)
	}
	if s.pttl == -1 {
		leak = append(leak, "no expiry")
	}
	n.Leak = strings.Join(leak, ", ")
	return n
}

// view is the LockInfo of key from every node's reading (nil: no
// answer): the per-node views in Nodes and the quorum view above them.
func (l *Locker) view(key string, col []*nodeState) distlock.LockInfo {
	info := distlock.LockInfo{Key: key, Nodes: make([]distlock.LockInfo, len(col))}
	votes := map[string]int{}
	counts := make([]int, len(col))
	var leaks []string
	noExpiry := false
	for i, s := range col {
		if s == nil {
			continue
		}
		n := s.info(key)
		info.Nodes[i], counts[i] = n, n.Waiters
		if n.Leak != "" {
			leaks = append(leaks, "node "+l.nodes[i].addr+": "+n.Leak)
		}
		if n.Holder != "" {
			votes[s.value]++
		}
		noExpiry = noExpiry || n.TTL == distlock.NoExpiry
	}
	for token, v := range votes {
		if v < l.quorum {
			continue // at most one token has a majority
		}
		info.Held, info.Holder = true, distlock.HolderID(token)
		for i, s := range col {
			if s != nil && s.value == token && s.typ == "string" {
				info.TTL = minTTL(info.TTL, info.Nodes[i].TTL)
			}
		}
	}
	if !info.Held && noExpiry {
		info.TTL = distlock.NoExpiry
	}
	slices.SortFunc(counts, func(a, b int) int { return b - a })
	info.Waiters = counts[l.quorum-1]
	info.Leak = strings.Join(leaks, "; ")
	return info
}

// minTTL is the shorter of two TTLs, NoExpiry counting as the longest;
// a is 0 before the first.
func minTTL(a, b time.Duration) time.Duration {
	inf := func(d time.Duration) time.Duration {
		if d == distlock.NoExpiry {
			return math.MaxInt64
		}
		return d
	}
	if a == 0 || inf(b) < inf(a) {
		return b
	}
	return a
}
