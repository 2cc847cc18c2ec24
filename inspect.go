package distlock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// Inspector is implemented by Lockers that can read and clear lock state
// as an operator would: Redisson's isLocked, remainTimeToLive and
// forceUnlock, Curator's getParticipantNodes. Reach it through the Inspect,
// List and ForceRelease functions, which return ErrNotSupported for a
// Locker that does not implement it. Each backend's package doc says what
// its LockInfo fields hold.
type Inspector interface {
	// Inspect reports the state of key as the backend sees it now. A key
	// nobody holds or waits for is LockInfo{Key: key}. An empty key
	// returns ErrInvalidArgument, a closed Locker ErrClosed, a backend
	// that cannot be reached ErrUnavailable.
	Inspect(ctx context.Context, key string) (LockInfo, error)

	// List reports the lock state the library keeps under prefix (keys
	// that start with it; "" lists everything), in key order, at most
	// page.Limit entries after page.Cursor. Held keys are listed, and so
	// is leaked state (LockInfo.Leak). Listing.Next is the cursor of the
	// next page, "" after the last. A Limit outside 0..MaxListLimit
	// returns ErrInvalidArgument.
	List(ctx context.Context, prefix string, page Page) (Listing, error)

	// ForceRelease frees key whoever holds it, as an operator would, and
	// reports whether it was held. The evicted holder's lease learns it
	// is lost as its backend's LostNotification allows (Done fires, Err
	// matches ErrLeaseLost); its Extend and Release return ErrLeaseLost
	// and never touch a later holder. The next holder gets a higher fence
	// wherever the backend's fences are monotonic. Errors as for Inspect.
	ForceRelease(ctx context.Context, key string) (bool, error)
}

// List page sizes.
const (
	// DefaultListLimit is the page size when Page.Limit is 0.
	DefaultListLimit = 100
	// MaxListLimit is the largest Page.Limit accepted.
	MaxListLimit = 1000
)

// NoExpiry is LockInfo.TTL for lock state the server will never expire
// by itself.
const NoExpiry time.Duration = -1

// Page selects one page of a List: the entries after Cursor (""
// for the first page), at most Limit of them (0 means DefaultListLimit).
type Page struct {
	Cursor string
	Limit  int
}

// LimitOrDefault returns the page size List should use, or an error
// matching ErrInvalidArgument when Limit is outside 0..MaxListLimit.
func (p Page) LimitOrDefault() (int, error) {
	switch {
	case p.Limit == 0:
		return DefaultListLimit, nil
	case p.Limit < 0 || p.Limit > MaxListLimit:
		return 0, fmt.Errorf("%w: list limit must be in 1..%d (0 for %d), got %d",
			ErrInvalidArgument, MaxListLimit, DefaultListLimit, p.Limit)
	}
	return p.Limit, nil
}

// Listing is one page of a List.
type Listing struct {
	// Locks are the entries of this page, in key order.
	Locks []LockInfo
	// Next is the Cursor of the next page; "" when this page is the last.
	Next string
}

// LockInfo is the state of one key as its backend sees it.
type LockInfo struct {
	// Key is the key as the caller names it (without the backend's
	// prefix or namespace).
	Key string
	// Held reports whether someone holds the key now.
	Held bool
	// Fence is the holder's fencing token, 0 when the key is not held or
	// the backend keeps no fence in its lock state.
	Fence uint64
	// Holder identifies the holder without revealing its token:
	// HolderID(lease.Token()) on backends that store the token, a
	// backend-specific stable id elsewhere (see the backend's doc); ""
	// when not held.
	Holder string
	// Label is the value the holder published with WithLabel, where the
	// backend stores it (see the backend's doc); "" otherwise.
	Label string
	// TTL is the time the holder has left as the server sees it: 0 when
	// not held or when the lock lives as long as a session rather than a
	// TTL (see the backend's doc), NoExpiry for state that never expires.
	TTL time.Duration
	// Waiters is the number of blocked Acquire calls queued on the
	// server, where the backend queues them; 0 elsewhere.
	Waiters int
	// Leak is non-empty when the library's state for this key can never
	// be freed by its holder or by expiry: no expiry, no owner, an
	// unreadable value. It says what is wrong. ForceRelease clears a
	// leaked holder; what it does with leaked waiters' state is in the
	// backend's doc.
	Leak string
	// Nodes is the per-server view where the backend spreads one lock
	// over several servers (Redlock), in the Locker's server order; nil
	// elsewhere. The fields above are then the quorum view.
	Nodes []LockInfo
}

// HolderID returns the holder id LockInfo.Holder reports for a lease with
// this token: 16 hex digits of its SHA-256, so that an operator can match
// a lease to the lock state without the token, which proves ownership,
// appearing in logs.
func HolderID(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:8])
}

// Inspect reports the state of key through l's Inspector, or returns an
// error matching ErrNotSupported when l does not implement one. A Locker
// that wraps another (Reentrant) reaches the wrapped one's Inspector.
func Inspect(ctx context.Context, l Locker, key string) (LockInfo, error) {
	in, err := inspector(l, "inspect")
	if err != nil {
		return LockInfo{}, err
	}
	return in.Inspect(ctx, key)
}

// List reports lock state under prefix through l's Inspector, or returns
// an error matching ErrNotSupported when l does not implement one.
func List(ctx context.Context, l Locker, prefix string, page Page) (Listing, error) {
	in, err := inspector(l, "list")
	if err != nil {
		return Listing{}, err
	}
	return in.List(ctx, prefix, page)
}

// ForceRelease frees key through l's Inspector, or returns an error
// matching ErrNotSupported when l does not implement one.
func ForceRelease(ctx context.Context, l Locker, key string) (bool, error) {
	in, err := inspector(l, "force release")
	if err != nil {
		return false, err
	}
	return in.ForceRelease(ctx, key)
}

// inspector returns l's Inspector, or that of the Locker l wraps (an
// Unwrap() Locker method, as Reentrant's), at most maxUnwrap levels down.
func inspector(l Locker, op string) (Inspector, error) {
	const maxUnwrap = 8
	for range maxUnwrap {
		if l == nil {
			return nil, fmt.Errorf("%w: %s: nil Locker", ErrInvalidArgument, op)
		}
		if in, ok := l.(Inspector); ok {
			return in, nil
		}
		u, ok := l.(interface{ Unwrap() Locker })
		if !ok {
			return nil, fmt.Errorf("%w: %s on backend %q", ErrNotSupported, op, l.Guarantees().Backend)
		}
		l = u.Unwrap()
	}
	return nil, fmt.Errorf("%w: %s: more than %d wrapped Lockers", ErrNotSupported, op, maxUnwrap)
}
