package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
)

var _ distlock.Inspector = (*Locker)(nil)

// inspectCallTimeout bounds a whole Inspect, List or ForceRelease call,
// whatever its context: each of its requests is bounded as well (see
// inspectDo), this is the backstop on their sum.
const inspectCallTimeout = time.Minute

// Inspect implements distlock.Inspector. It reads the lock's queue (the
// entries directly under its prefix, in reads of 1000 keys at one
// revision) and the remaining time of its holder's etcd lease: Held when
// there is an entry, the holder being the one with the lowest create
// revision; Fence its create revision (the lease's Fence); Holder
// distlock.HolderID of the token in its value, or "etcd-lease:" and its
// etcd lease ID in hex for an entry without a token (concurrency.Mutex
// and `etcdctl lock` write an empty value); Label the label in its value;
// TTL the remaining time of the holder's etcd lease, rounded up to whole
// seconds (distlock.NoExpiry for an entry without one, 0 if the lease
// ended after the read); Waiters the other entries; Leak the entries
// without an etcd lease or whose value is neither a token nor empty. See
// Inspection in the package documentation.
//
// Each request is tried once per endpoint at most, each try bounded by
// Options.RequestTimeout (at most a third of the Locker's default TTL),
// and the whole call by a minute. A lock prefix holding more than a
// million keys (those of the locks of longer keys included) returns an
// error matching distlock.ErrNotSupported; a cluster that
// cannot be reached, distlock.ErrUnavailable. An empty key, or one longer
// than MaxKeyLen, returns an error matching distlock.ErrInvalidArgument;
// after Close, distlock.ErrClosed.
func (l *Locker) Inspect(ctx context.Context, key string) (distlock.LockInfo, error) {
	ctx, done, err := l.enterInspect(ctx, key)
	if err != nil {
		return distlock.LockInfo{}, err
	}
	defer done()
	st, err := l.readLock(ctx, key)
	if err != nil {
		return distlock.LockInfo{}, l.inspectErr("inspect", err)
	}
	ttls, err := l.leaseTTLs(ctx, []*lockState{st})
	if err != nil {
		return distlock.LockInfo{}, l.inspectErr("inspect", err)
	}
	return st.info(key, ttls), nil
}

// ForceRelease implements distlock.Inspector: it reads the lock's queue
// as Inspect does and deletes the holder's entry in a transaction guarded
// by the entry's mod revision, so that it deletes only the entry it read:
// a holder that took the key since (the one read released it) is left
// alone, and a retried delete cannot delete a later entry. The etcd lease
// is not revoked, as that would also end the other locks and waiters of
// the holder's session. The next waiter is woken by its watch as for a
// release, and its fence (its entry's create revision) is higher. The
// evicted lease is not told at once: its Extend (and so its watchdog's
// next extension) and Release fail with ErrKeyGone, which matches
// distlock.ErrLeaseLost, and otherwise Done fires at the end of its
// validity. It reports whether the key was held; errors as for Inspect.
func (l *Locker) ForceRelease(ctx context.Context, key string) (bool, error) {
	ctx, done, err := l.enterInspect(ctx, key)
	if err != nil {
		return false, err
	}
	defer done()
	st, err := l.readLock(ctx, key)
	if err != nil {
		return false, l.inspectErr("force release", err)
	}
	h := st.holder
	if h == nil {
		return false, nil
	}
	err = l.inspectDo(ctx, func(ctx context.Context) error {
		_, err := l.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(string(h.Key)), "=", h.ModRevision)).
			Then(clientv3.OpDelete(string(h.Key))).
			Commit()
		return err
	})
	if err != nil {
		return false, l.inspectErr("force release", err)
	}
	return true, nil
}

// enterInspect checks key as an acquisition does, registers the call
// (distlock.ErrClosed once Close has begun) and bounds ctx by
// inspectCallTimeout and the Locker's closing. A nil error must be
// matched by a call of done.
func (l *Locker) enterInspect(ctx context.Context, key string) (_ context.Context, done func(), err error) {
	if err := distlock.CheckKey(key); err != nil {
		return nil, nil, err
	}
	if err := checkKey(key); err != nil {
		return nil, nil, err
	}
	return l.enterCall(ctx)
}

// enterCall registers an inspection call and bounds its context (see
// enterInspect).
func (l *Locker) enterCall(ctx context.Context) (_ context.Context, done func(), err error) {
	if !l.lc.Enter() {
		return nil, nil, distlock.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, inspectCallTimeout)
	stop := context.AfterFunc(l.lc.Closing().Context(), cancel)
	return ctx, func() {
		stop()
		cancel()
		l.lc.Leave()
	}, nil
}

// inspectDo runs one request of an inspection: at most one try per
// endpoint (the client picks the next member), each bounded by the try
// timeout of the Locker's default TTL.
func (l *Locker) inspectDo(ctx context.Context, req func(ctx context.Context) error) error {
	_, err := l.do(ctx, l.opts.Lock.TTL, time.Time{}, len(l.cli.Endpoints()), nil, req)
	return err
}

// inspectErr is the error of an inspection call that failed with err: it
// matches distlock.ErrClosed if the Locker closed meanwhile, else
// distlock.ErrUnavailable unless it already matches a root sentinel.
func (l *Locker) inspectErr(op string, err error) error {
	switch {
	case errors.Is(err, distlock.ErrNotSupported), errors.Is(err, distlock.ErrClosed):
		return err
	case l.lc.Closing().Fired():
		return errors.Join(distlock.ErrClosed, err)
	}
	return unavailable(op, err)
}

// readLock reads the entries of the lock of key, at one revision.
func (l *Locker) readLock(ctx context.Context, key string) (*lockState, error) {
	pfx := l.prefix(key)
	st := &lockState{}
	err := l.scan(ctx, pfx, clientv3.GetPrefixRangeEnd(pfx), func(kv *mvccpb.KeyValue) {
		if isEntry(pfx, kv.Key) {
			st.add(kv.Key[len(pfx):], kv)
		}
	})
	return st, err
}

// maxLeaks is how many leaked entries a LockInfo.Leak names.
const maxLeaks = 3

// lockState is what a read found of one lock's entries.
type lockState struct {
	holder  *mvccpb.KeyValue // the entry with the lowest create revision
	entries int
	leaks   []string // the first maxLeaks leaked entries
	leaked  int      // how many entries leaked
}

// add counts the entry kv, named name under the lock's prefix.
func (s *lockState) add(name []byte, kv *mvccpb.KeyValue) {
	s.entries++
	if s.holder == nil || kv.CreateRevision < s.holder.CreateRevision {
		s.holder = kv
	}
	var what []string
	if kv.Lease == 0 {
		what = append(what, "no etcd lease, never expires")
	}
	if _, _, kind := parseValue(kv.Value); kind == foreignValue {
		what = append(what, "its value is not a distlock token")
	}
	if len(what) == 0 {
		return
	}
	if s.leaked++; len(s.leaks) < maxLeaks {
		s.leaks = append(s.leaks, fmt.Sprintf("entry %q: %s", name, strings.Join(what, ", ")))
	}
}

// info is the LockInfo of the lock key in state s; ttls holds the
// remaining time of the etcd leases (leaseTTLs).
func (s *lockState) info(key string, ttls map[int64]time.Duration) distlock.LockInfo {
	info := distlock.LockInfo{Key: key}
	h := s.holder
	if h == nil {
		return info
	}
	info.Held, info.Fence, info.Waiters = true, uint64(h.CreateRevision), s.entries-1
	if token, label, kind := parseValue(h.Value); kind == tokenValue {
		info.Holder, info.Label = distlock.HolderID(token), label
	} else {
		info.Holder = fmt.Sprintf("etcd-lease:%x", h.Lease)
	}
	info.TTL = distlock.NoExpiry
	if h.Lease != 0 {
		info.TTL = ttls[h.Lease]
	}
	if s.leaked > 0 {
		info.Leak = strings.Join(s.leaks, "; ")
		if more := s.leaked - len(s.leaks); more > 0 {
			info.Leak += fmt.Sprintf("; and %d more", more)
		}
	}
	return info
}
