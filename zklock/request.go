package zklock

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lifecycle"
)

// MultiIfHeld runs ops atomically in one ZooKeeper transaction
// (zk.Conn.Multi: *zk.CreateRequest, *zk.SetDataRequest,
// *zk.DeleteRequest, *zk.CheckVersionRequest), preceded by a check that
// ls's lock node still exists unchanged: the writes apply only while ls
// holds the key, whatever the holder's clock or pauses (the check runs
// inside the coordinator, which makes it stronger than a fence). It
// returns the responses to ops (without the check's).
//
// ls must be a lease this Locker granted and that was not released, else
// the error matches distlock.ErrInvalidArgument. If the transaction is
// refused because the lock node is gone, the error matches
// distlock.ErrLeaseLost; if an op of the caller failed, it wraps zk's
// error (zk.ErrNoNode, zk.ErrBadVersion, ...); transport errors match
// distlock.ErrUnavailable, and then whether it applied is unknown.
func (l *Locker) MultiIfHeld(ctx context.Context, ls distlock.Lease, ops ...any) ([]zk.MultiResponse, error) {
	l.lc.Lock()
	d := l.leases[ls]
	l.lc.Unlock()
	if d == nil {
		return nil, fmt.Errorf("%w: zklock: MultiIfHeld: the lease was not granted by this Locker or was released", distlock.ErrInvalidArgument)
	}
	all := append([]any{&zk.CheckVersionRequest{Path: d.path, Version: d.version}}, ops...)
	res, err := call(l, ctx, func() ([]zk.MultiResponse, error) { return d.s.conn.Multi(all...) }, nil)
	if err == nil {
		return res[1:], nil
	}
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
		ok, xerr := call(l, ctx, func() (bool, error) {
			ok, _, err := d.s.conn.Exists(d.path)
			return ok, err
		}, nil)
		if xerr == nil && !ok {
			return nil, fmt.Errorf("%w: zklock: transaction on %q refused: the lock node is gone: %w", distlock.ErrLeaseLost, d.key, err)
		}
	}
	return nil, wrap("multi", err)
}

// call runs one go-zookeeper request f, which has no context, and returns
// its result, or ctx's error (ctxErr) as soon as ctx ends: f runs
// detached on a goroutine of l's lifecycle (see lifecycle.Detach) when ctx
// can end, and abandoned (if not nil) cleans up after a request the caller
// left, which may have taken effect. A request returns at the latest when
// go-zookeeper gives the connection up (two thirds of the session timeout
// without a byte from the server) or the Locker closes.
func call[T any](l *Locker, ctx context.Context, f func() (T, error), abandoned func(T, error)) (T, error) {
	v, err := lifecycle.Detach(&l.lc, ctx, func(context.Context) (T, error) { return f() }, abandoned, ctxErr)
	return v, l.refused(err)
}
