package etcdlock

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/listpage"
)

// Bounds of the reads of Inspect, List and ForceRelease.
const (
	// scanBatch is the most keys one read of a scan returns.
	scanBatch = 1000
	// scanMaxRounds bounds the reads of one scan, so that it examines at
	// most scanBatch x scanMaxRounds keys (a million).
	scanMaxRounds = 1000
	// ttlLookups is how many LeaseTimeToLive requests a List has in
	// flight at once.
	ttlLookups = 8
)

// List implements distlock.Inspector. Lock names are the etcd keys under
// Options.Prefix+prefix without the Prefix and without their last "/"
// and what follows it (see Keys in the package documentation): it reads
// every key of that range from the first that can belong to a lock after
// page.Cursor, at one revision, in reads of 1000 keys, keeping as it
// goes the Limit+1 smallest lock names and their entries; then it asks
// etcd for the remaining time of each distinct holder's etcd lease
// (8 requests at a time). Each lock is reported as Inspect reports it, in
// bytewise key order (which is not the order of the etcd keys: the
// entries of "a" sort after those of "a.b"), so the range is read to its
// end for every page. Every listed lock is held (its first entry holds
// it). Names that are empty or longer than MaxKeyLen are skipped; with an
// empty Options.Prefix every etcd key with a "/" is an entry of some lock,
// and is listed (one without an etcd lease as a leak): give the Locker a
// Prefix to list only its locks. A range of more than a million keys
// makes List fail with an error matching distlock.ErrNotSupported. A page
// limit outside 0..MaxListLimit returns distlock.ErrInvalidArgument; other
// errors and bounds as for Inspect.
func (l *Locker) List(ctx context.Context, prefix string, page distlock.Page) (distlock.Listing, error) {
	limit, err := page.LimitOrDefault()
	if err != nil {
		return distlock.Listing{}, err
	}
	ctx, done, err := l.enterCall(ctx)
	if err != nil {
		return distlock.Listing{}, err
	}
	defer done()
	found, err := l.scanLocks(ctx, prefix, page.Cursor, limit+1)
	if err != nil {
		return distlock.Listing{}, l.inspectErr("list", err)
	}
	var out distlock.Listing
	keys := sortedKeys(found)
	keys, out.Next = listpage.Cut(keys, limit)
	states := make([]*lockState, len(keys))
	for i, k := range keys {
		states[i] = found[k]
	}
	ttls, err := l.leaseTTLs(ctx, states)
	if err != nil {
		return distlock.Listing{}, l.inspectErr("list", err)
	}
	for i, k := range keys {
		out.Locks = append(out.Locks, states[i].info(k, ttls))
	}
	return out, nil
}

// scanLocks reads the locks named after cursor under prefix (see List)
// and returns the keep smallest with their entries.
func (l *Locker) scanLocks(ctx context.Context, prefix, cursor string, keep int) (map[string]*lockState, error) {
	p := l.opts.Prefix
	from, end := p+prefix, clientv3.GetPrefixRangeEnd(p+prefix)
	// The entries of a lock named after cursor sort at or after
	// Prefix+cursor: the name starts with cursor, or differs from it
	// first by a greater byte.
	if cursor > prefix {
		from = p + cursor
	}
	if from == "" {
		from = "\x00"
	}
	found := map[string]*lockState{}
	if end != "\x00" && from >= end {
		return found, nil
	}
	var bound string // after a prune: the largest name kept
	err := l.scan(ctx, from, end, func(kv *mvccpb.KeyValue) {
		name := kv.Key[len(p):]
		i := bytes.LastIndexByte(name, '/')
		if i <= 0 || i == len(name)-1 {
			return // no lock name, or no entry name
		}
		k := string(name[:i])
		if k <= cursor || !strings.HasPrefix(k, prefix) || checkKey(k) != nil || (bound != "" && k > bound) {
			return
		}
		st := found[k]
		if st == nil {
			st = &lockState{}
			found[k] = st
		}
		st.add(name[i+1:], kv)
		if len(found) > 4*keep {
			bound = prune(found, keep)
		}
	})
	if err != nil {
		return nil, err
	}
	prune(found, keep)
	return found, nil
}

// prune cuts found to its keep smallest names and returns the largest
// name kept. A name it drops can never be among the keep smallest again
// (those kept are all smaller), so its later entries are skipped.
func prune(found map[string]*lockState, keep int) string {
	keys := sortedKeys(found)
	if len(keys) <= keep {
		return ""
	}
	for _, k := range keys[keep:] {
		delete(found, k)
	}
	return keys[keep-1]
}

func sortedKeys(m map[string]*lockState) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// scan calls visit with every key in [from, end) (end "\x00": every key
// from on), in key order, read at the revision of its first read in reads
// of scanBatch keys. After scanMaxRounds reads it fails with an error
// matching distlock.ErrNotSupported.
func (l *Locker) scan(ctx context.Context, from, end string, visit func(kv *mvccpb.KeyValue)) error {
	var rev int64
	for round := 0; ; round++ {
		if round == scanMaxRounds {
			return fmt.Errorf("%w: etcdlock: more than %d keys to read under %q: inspection reads up to that many; inspect known keys, or list a narrower prefix",
				distlock.ErrNotSupported, scanBatch*scanMaxRounds, from)
		}
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(scanBatch)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		var resp *clientv3.GetResponse
		err := l.inspectDo(ctx, func(ctx context.Context) error {
			var err error
			resp, err = l.cli.Get(ctx, from, opts...)
			return err
		})
		if err != nil {
			return err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			visit(kv)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// leaseTTLs asks etcd for the remaining time of the etcd lease of each
// holder in states (each distinct lease once, ttlLookups at a time). etcd
// answers in whole seconds, rounded down; the time reported is rounded
// up, so that a live lease never shows 0. A lease that has ended (its
// entries went with it after the read) shows 0.
func (l *Locker) leaseTTLs(ctx context.Context, states []*lockState) (map[int64]time.Duration, error) {
	ttls := map[int64]time.Duration{}
	var ids []int64
	for _, st := range states {
		if h := st.holder; h != nil && h.Lease != 0 {
			if _, ok := ttls[h.Lease]; !ok {
				ttls[h.Lease] = 0
				ids = append(ids, h.Lease)
			}
		}
	}
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
		slots = make(chan struct{}, ttlLookups)
	)
	for _, id := range ids {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			var resp *clientv3.LeaseTimeToLiveResponse
			err := l.inspectDo(ctx, func(ctx context.Context) error {
				var err error
				resp, err = l.cli.TimeToLive(ctx, clientv3.LeaseID(id))
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				first = cmp.Or(first, err)
			case resp.TTL >= 0:
				ttls[id] = time.Duration(resp.TTL+1) * time.Second
			}
		}()
	}
	wg.Wait()
	return ttls, first
}
