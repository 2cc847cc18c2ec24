package redissingle

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/listpage"
)

// Bounds of List's scan of each server.
const (
	// listScanCount is the COUNT of each SCAN: the work one call asks of
	// the server, small enough not to hold up its lock traffic.
	listScanCount = 1000
	// listMaxRounds bounds the SCAN calls List makes to one server, so
	// that it examines at most about listScanCount x listMaxRounds keys
	// (a million) of its database.
	listMaxRounds = 1000
)

// List implements distlock.Inspector. It walks the database with SCAN
// (MATCH Prefix+prefix*, COUNT 1000, TYPE string; never KEYS), on every
// master in Cluster, each call bounded by inspectTimeout (1 s) and ctx;
// it keeps, as it goes, the Limit+1 smallest keys after page.Cursor in
// bytewise order, so the page is exact whatever the number of keys, then
// reads those Limit keys in one pipeline (as Inspect does) and reports
// each that is held or leaks. Next is the page's last key when more
// follow. A key freed between the scan and the read is left out, so a
// page can hold fewer than Limit entries while Next is set. Names with
// "distlock:" after the Prefix (the Locker's own keys) or longer than
// MaxKeyLen are not lock names and are skipped. With an empty
// Options.Prefix every string key of the database is a possible lock and
// is listed (one without expiry as a leak). A lock key of another type
// than a string, and a wait queue whose lock key is gone, are not found
// by the scan: Inspect reports them. A SCAN that has not finished after
// 1000 rounds (a database of about a million keys) makes List fail with
// an error matching distlock.ErrNotSupported: use Inspect on known keys.
// A page limit outside 0..MaxListLimit returns
// distlock.ErrInvalidArgument; other errors as for Inspect.
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
	st, err := l.read(ctx, "list", keys)
	if err != nil {
		return distlock.Listing{}, err
	}
	for i, key := range keys {
		if info := st[i].info(key); info.Held || info.Leak != "" {
			out.Locks = append(out.Locks, info)
		}
	}
	return out, nil
}

// scan returns the keep smallest lock names under prefix and after
// cursor, in bytewise order (see List).
func (l *Locker) scan(ctx context.Context, prefix, cursor string, keep int) ([]string, error) {
	full := l.opts.Prefix + prefix
	pattern := listpage.MatchPrefix(full)
	var mu sync.Mutex
	found := listpage.NewCollector(cursor, keep)
	node := func(ctx context.Context, c redis.Cmdable) error {
		var at uint64
		for range listMaxRounds {
			names, next, err := l.scanOnce(ctx, c, at, pattern)
			if err != nil {
				return err
			}
			mu.Lock()
			for _, name := range names {
				key, ok := strings.CutPrefix(name, l.opts.Prefix)
				if ok && strings.HasPrefix(name, full) && checkKey(l.opts.Prefix, key) == nil {
					found.Offer(key)
				}
			}
			mu.Unlock()
			if at = next; at == 0 {
				return nil
			}
		}
		return fmt.Errorf("%w: redissingle: list: SCAN did not finish in %d rounds of %d keys: List supports databases up to that size; use Inspect on known keys",
			distlock.ErrNotSupported, listMaxRounds, listScanCount)
	}
	var err error
	if cc, ok := l.client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return node(ctx, c) })
	} else {
		err = node(ctx, l.client)
	}
	if err != nil {
		return nil, err
	}
	return found.Names(), nil
}

// scanOnce is one SCAN call on c, bounded by inspectTimeout and ctx.
func (l *Locker) scanOnce(ctx context.Context, c redis.Cmdable, at uint64, pattern string) ([]string, uint64, error) {
	type page struct {
		names []string
		next  uint64
	}
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	p, err := exec(l, ctx, func(ctx context.Context) (page, error) {
		names, next, err := c.ScanType(ctx, at, pattern, listScanCount, "string").Result()
		return page{names, next}, err
	}, nil)
	if err != nil {
		return nil, 0, l.wrap("list", err)
	}
	return p.names, p.next, nil
}
