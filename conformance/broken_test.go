package conformance

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/memlock"
)

// Deliberately broken lockers: the suite must call each one a BUG.

// brokenLocker wraps a correct memlock handle and breaks one thing.
type brokenLocker struct {
	inner *memlock.Locker
	flaw  string
}

var grantSeq atomic.Int64

func (b *brokenLocker) key(key string) string {
	if b.flaw == "grant-everyone" { // every caller gets its own private key
		return fmt.Sprintf("%s#%d", key, grantSeq.Add(1))
	}
	return key
}

func (b *brokenLocker) opts(opts []distlock.Option) []distlock.Option {
	if b.flaw == "silent-expiry" { // renewal silently dropped
		return append(opts, func(o *distlock.Options) { o.AutoExtend = false })
	}
	return opts
}

func (b *brokenLocker) wrap(l distlock.Lease, err error) (distlock.Lease, error) {
	if err != nil {
		return nil, err
	}
	return &brokenLease{Lease: l, owner: b}, nil
}

func (b *brokenLocker) Acquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	return b.wrap(b.inner.Acquire(ctx, b.key(key), b.opts(opts)...))
}

func (b *brokenLocker) TryAcquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	return b.wrap(b.inner.TryAcquire(ctx, b.key(key), b.opts(opts)...))
}

func (b *brokenLocker) Guarantees() distlock.Guarantees { return b.inner.Guarantees() }
func (b *brokenLocker) Close() error                    { return b.inner.Close() }

type brokenLease struct {
	distlock.Lease
	owner *brokenLocker
}

var never = make(chan struct{})

func (l *brokenLease) Done() <-chan struct{} {
	if l.owner.flaw == "silent-expiry" {
		return never
	}
	return l.Lease.Done()
}

func (l *brokenLease) Err() error {
	if l.owner.flaw == "silent-expiry" {
		return nil
	}
	return l.Lease.Err()
}

func (l *brokenLease) ValidUntil() time.Time {
	if l.owner.flaw == "silent-expiry" {
		return time.Now().Add(time.Hour)
	}
	return l.Lease.ValidUntil()
}

func (l *brokenLease) Fence() uint64 {
	if l.owner.flaw == "fence-regression" {
		return 1_000_000 - l.Lease.Fence()
	}
	return l.Lease.Fence()
}

func (l *brokenLease) Extend(ctx context.Context, ttl time.Duration) error {
	if l.owner.flaw == "extend-always" {
		_ = l.Lease.Extend(ctx, ttl)
		return nil
	}
	return l.Lease.Extend(ctx, ttl)
}

func (l *brokenLease) Release(ctx context.Context) error {
	if l.owner.flaw == "plain-delete" { // DEL whoever holds the key
		err := l.Lease.Release(ctx)
		l.owner.inner.Revoke(l.Key())
		return err
	}
	return l.Lease.Release(ctx)
}

// brokenHarness is an in-process harness over a broken locker.
func brokenHarness(flaw string) Harness {
	space := memlock.New(nil)
	return Harness{
		Name: "broken-" + flaw,
		TTL:  300 * time.Millisecond,
		NewLocker: func(context.Context, string) (distlock.Locker, error) {
			return &brokenLocker{inner: space.NewHandle(), flaw: flaw}, nil
		},
	}
}
