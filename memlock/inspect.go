package memlock

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/listpage"
)

var _ distlock.Inspector = (*Locker)(nil)

// Inspect reports key's state in the space: the holder's fence, label and
// HolderID(token), the time left of its TTL, and the blocked Acquire calls
// queued on it (of every client of the space). An empty key returns an
// error matching distlock.ErrInvalidArgument, a closed Locker
// distlock.ErrClosed. The in-process space never leaks: Leak is always "".
func (l *Locker) Inspect(ctx context.Context, key string) (distlock.LockInfo, error) {
	if err := l.enterInspect(key); err != nil {
		return distlock.LockInfo{}, err
	}
	defer l.lc.Leave()
	s := l.space
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.infoLocked(key, s.keys[key], time.Now()), nil
}

// List reports the held keys of the space that start with prefix, in key
// order, a page at a time (see distlock.Page). Keys with waiters but no
// holder are not listed. Errors as for Inspect; a page limit out of range
// returns distlock.ErrInvalidArgument.
func (l *Locker) List(ctx context.Context, prefix string, page distlock.Page) (distlock.Listing, error) {
	limit, err := page.LimitOrDefault()
	if err != nil {
		return distlock.Listing{}, err
	}
	if !l.lc.Enter() {
		return distlock.Listing{}, distlock.ErrClosed
	}
	defer l.lc.Leave()
	s := l.space
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var keys []string
	for k, e := range s.keys {
		if strings.HasPrefix(k, prefix) && k > page.Cursor && e.held(now) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out distlock.Listing
	keys, out.Next = listpage.Cut(keys, limit)
	for _, k := range keys {
		out.Locks = append(out.Locks, s.infoLocked(k, s.keys[k], now))
	}
	return out, nil
}

// ForceRelease frees key whoever holds it, as Revoke does: the holder's
// lease is told it is lost (Done fires, Err matches distlock.ErrLeaseLost)
// before the next waiter is woken, and the next holder gets a higher
// fence. It reports whether the key was held. Errors as for Inspect.
func (l *Locker) ForceRelease(ctx context.Context, key string) (bool, error) {
	if err := l.enterInspect(key); err != nil {
		return false, err
	}
	defer l.lc.Leave()
	return l.space.revoke(key), nil
}

// enterInspect checks key and enters a call in flight; the caller Leaves.
func (l *Locker) enterInspect(key string) error {
	if err := distlock.CheckKey(key); err != nil {
		return err
	}
	if !l.lc.Enter() {
		return distlock.ErrClosed
	}
	return nil
}

// infoLocked is the LockInfo of key's entry e (nil when key has none).
func (s *space) infoLocked(key string, e *entry, now time.Time) distlock.LockInfo {
	info := distlock.LockInfo{Key: key}
	if e == nil {
		return info
	}
	info.Waiters = len(e.waiters)
	if !e.held(now) {
		return info
	}
	info.Held, info.Fence, info.Label = true, e.fence, e.label
	info.Holder = distlock.HolderID(e.token)
	info.TTL = e.expires.Sub(now)
	return info
}
