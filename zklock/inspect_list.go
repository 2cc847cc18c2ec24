package zklock

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
)

// listParallel is how many keys List reads at once, each on its own
// goroutine (go-zookeeper pipelines their requests on the session).
const listParallel = 8

// List implements distlock.Inspector. The lock of key k is the node
// Prefix/escape(k) (see Keys in the package documentation), so List
// syncs and lists Options.Prefix (in one reply, which must fit in the
// ensemble's jute.maxbuffer), keeps the children that are the escape of
// a key starting with prefix and greater than page.Cursor, sorts those
// keys bytewise, and reads each one's queue as Inspect does, listParallel
// at a time. Held keys are listed (a leaked lock node is held: it is
// first in its queue or behind a holder); an empty parent is not, as the
// server deletes it (a container node) within its container check
// interval. A page reads at most 2 x its limit keys: when it stops short
// of the limit there, Next is the last key read. Children of
// Options.Prefix that no key escapes to are ignored. Errors as for
// Inspect; a page limit out of range returns distlock.ErrInvalidArgument.
func (l *Locker) List(ctx context.Context, prefix string, page distlock.Page) (distlock.Listing, error) {
	limit, err := page.LimitOrDefault()
	if err != nil {
		return distlock.Listing{}, err
	}
	s, ctx, done, err := l.enterInspect(ctx)
	if err != nil {
		return distlock.Listing{}, err
	}
	defer done()
	root := l.opts.Prefix
	if _, err := call(l, ctx, func() (string, error) { return s.conn.Sync(root) }, nil); err != nil {
		return distlock.Listing{}, wrap("sync "+root, err)
	}
	children, err := call(l, ctx, func() ([]string, error) {
		c, _, err := s.conn.Children(root)
		return c, err
	}, nil)
	if errors.Is(err, zk.ErrNoNode) {
		return distlock.Listing{}, nil
	}
	if err != nil {
		return distlock.Listing{}, wrap("list "+root, err)
	}
	var keys []string
	for _, c := range children {
		if k, ok := unescape(c); ok && strings.HasPrefix(k, prefix) && k > page.Cursor {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out distlock.Listing
	for read := 0; len(keys) > 0 && len(out.Locks) < limit; {
		if read >= 2*limit {
			break
		}
		batch := keys[:min(limit-len(out.Locks), 2*limit-read, len(keys))]
		infos, err := l.readKeys(ctx, s, batch)
		if err != nil {
			return distlock.Listing{}, err
		}
		for _, info := range infos {
			if info.Held {
				out.Locks = append(out.Locks, info)
			}
		}
		keys, read, page.Cursor = keys[len(batch):], read+len(batch), batch[len(batch)-1]
	}
	if len(keys) > 0 {
		out.Next = page.Cursor
	}
	return out, nil
}

// readKeys reads the queues of keys, listParallel at a time, and returns
// their LockInfos in the order of keys, or the first error.
func (l *Locker) readKeys(ctx context.Context, s *session, keys []string) ([]distlock.LockInfo, error) {
	infos := make([]distlock.LockInfo, len(keys))
	errs := make([]error, len(keys))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(listParallel, len(keys)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(keys); i = int(next.Add(1)) - 1 {
				q, err := l.readQueue(ctx, s, l.Path(keys[i]), false)
				infos[i], errs[i] = q.info(keys[i]), err
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return infos, nil
}

// unescape inverts escape: the key whose escape is name, or false for a
// name that escape makes of no key (a foreign child of the prefix).
func unescape(name string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] != '%' {
			b.WriteByte(name[i])
			continue
		}
		if i+2 >= len(name) {
			return "", false
		}
		v, err := strconv.ParseUint(name[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	k := b.String()
	return k, k != "" && escape(k) == name
}
