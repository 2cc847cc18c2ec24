package redlock

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/listpage"
)

// Bounds of List's scan of each node.
const (
	// listScanCount is the COUNT of each SCAN: the work one call asks of
	// a node, small enough not to hold up its lock traffic.
	listScanCount = 1000
	// listMaxRounds bounds the SCAN calls List makes to one node, so that
	// it examines at most about listScanCount x listMaxRounds keys (a
	// million) of a node's database.
	listMaxRounds = 1000
)

// List implements distlock.Inspector. It walks every node's database
// with SCAN (MATCH Prefix+prefix*, COUNT 1000, TYPE string; never KEYS),
// in multiplexed rounds each bounded as Inspect's, merging the lock names
// of all nodes; it keeps, as it goes, the Limit+1 smallest keys after
// page.Cursor in bytewise order, then reads those Limit keys on every
// node in one round trip (as Inspect does, in one script call per node)
// and reports each key that some node holds: held by a majority or not,
// with its per-node view in Nodes (see Inspection in the package
// documentation). The page is exact whatever the number of keys, and
// Next is its last key when more follow. A key that expires between the
// scan and the read is left out, so a page can hold fewer than Limit
// entries while Next is set. Names with "distlock:" after the Prefix
// (the Locker's own keys) and longer than MaxKeyLen are not lock names
// and are skipped; with an empty Options.Prefix every string key of the
// database is a possible lock, and is listed. A node that answers neither
// every round nor the read counts as failed: if fewer than a majority
// are left, the error is a *QuorumError matching distlock.ErrUnavailable.
// A node whose SCAN has not finished after 1000 rounds (a database of
// about a million keys) makes List fail with an error matching
// distlock.ErrNotSupported. A page limit outside 0..MaxListLimit returns
// distlock.ErrInvalidArgument; after Close, distlock.ErrClosed.
func (l *Locker) List(ctx context.Context, prefix string, page distlock.Page) (distlock.Listing, error) {
	limit, err := page.LimitOrDefault()
	if err != nil {
		return distlock.Listing{}, err
	}
	if !l.lc.Enter() {
		return distlock.Listing{}, distlock.ErrClosed
	}
	defer l.lc.Leave()
	keys, err := l.scan(ctx, prefix, page.Cursor, limit+1)
	if err != nil || len(keys) == 0 {
		return distlock.Listing{}, err
	}
	var out distlock.Listing
	keys, out.Next = listpage.Cut(keys, limit)
	st, errs := l.read(ctx, keys)
	if err := l.quorumErr(ctx, "list", prefix, errs); err != nil {
		return distlock.Listing{}, err
	}
	for j, key := range keys {
		info := l.view(key, column(st, j))
		if slices.ContainsFunc(info.Nodes, func(n distlock.LockInfo) bool { return n.Held }) {
			out.Locks = append(out.Locks, info)
		}
	}
	return out, nil
}

// scan returns the keep smallest lock names under prefix and after
// cursor that the nodes' SCANs return, in bytewise order (see List).
func (l *Locker) scan(ctx context.Context, prefix, cursor string, keep int) ([]string, error) {
	full := l.opts.Prefix + prefix
	pattern := listpage.MatchPrefix(full)
	n := len(l.nodes)
	cursors := make([]string, n)
	active := make([]bool, n)
	for i := range cursors {
		cursors[i], active[i] = "0", true
	}
	errs := make([]error, n)
	found := listpage.NewCollector(cursor, keep)
	for round := 0; slices.Contains(active, true); round++ {
		if round == listMaxRounds {
			i := slices.Index(active, true)
			return nil, fmt.Errorf("%w: redlock: list: node %s: SCAN did not finish in %d rounds of %d keys: List supports databases up to that size; use Inspect on known keys",
				distlock.ErrNotSupported, l.nodes[i].addr, listMaxRounds, listScanCount)
		}
		res := l.fanoutOne(ctx, time.Now().Add(l.inspectTimeout()), func(i int) []string {
			if !active[i] {
				return nil
			}
			return []string{"SCAN", cursors[i], "MATCH", pattern, "COUNT", strconv.Itoa(listScanCount), "TYPE", "string"}
		}, nil)
		for i, r := range res {
			if !active[i] {
				continue
			}
			next, names, err := parseScan(r)
			if err != nil {
				errs[i], active[i] = err, false
				continue
			}
			for _, name := range names {
				key, ok := strings.CutPrefix(name, l.opts.Prefix)
				if ok && strings.HasPrefix(name, full) && l.checkKey(key) == nil {
					found.Offer(key)
				}
			}
			cursors[i], active[i] = next, next != "0"
		}
	}
	if err := l.quorumErr(ctx, "list", prefix, errs); err != nil {
		return nil, err
	}
	return found.Names(), nil
}

// parseScan decodes a SCAN reply: the next cursor and the names.
func parseScan(r result) (string, []string, error) {
	if r.err != nil {
		return "", nil, r.err
	}
	vs, ok := r.v.([]any)
	if !ok || len(vs) != 2 {
		return "", nil, fmt.Errorf("scan: unexpected reply %T", r.v)
	}
	next, ok1 := vs[0].(string)
	items, ok2 := vs[1].([]any)
	if !ok1 || !ok2 {
		return "", nil, fmt.Errorf("scan: unexpected reply")
	}
	names := make([]string, 0, len(items))
	for _, it := range items {
		s, ok := it.(string)
		if !ok {
			return "", nil, fmt.Errorf("scan: unexpected name %T", it)
		}
		names = append(names, s)
	}
	return next, names, nil
}
