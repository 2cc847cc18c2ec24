package etcdlock

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
)

// HeldCmp returns the comparison that holds exactly while ls still holds
// its lock: its entry exists with the create revision it was granted with
// (ls.Fence()). No other client can hold the lock while it does, so a
// transaction with HeldCmp in its If is a write fenced by etcd itself,
// safe even if the holder was paused past its lease. A lease known lost
// still gets its comparison (etcd decides). ls must come from this Locker
// and not be released; otherwise the error matches
// distlock.ErrInvalidArgument or distlock.ErrReleased.
func (l *Locker) HeldCmp(ls distlock.Lease) (clientv3.Cmp, error) {
	l.mu.Lock()
	d := l.held[ls]
	l.mu.Unlock()
	if d == nil {
		if err := ls.Err(); err != nil {
			return clientv3.Cmp{}, err
		}
		return clientv3.Cmp{}, fmt.Errorf("%w: etcdlock: lease of %q is not held through this Locker", distlock.ErrInvalidArgument, ls.Key())
	}
	return clientv3.Compare(clientv3.CreateRevision(d.my), "=", d.rev), nil
}

// TxnIfHeld commits ops in one transaction only if ls still holds its
// lock (see HeldCmp). If it does not, nothing is applied and the error
// matches distlock.ErrLeaseLost (ErrKeyGone); a failed request matches
// distlock.ErrUnavailable (the outcome is then unknown).
func (l *Locker) TxnIfHeld(ctx context.Context, ls distlock.Lease, ops ...clientv3.Op) (*clientv3.TxnResponse, error) {
	cmp, err := l.HeldCmp(ls)
	if err != nil {
		return nil, err
	}
	resp, err := l.cli.Txn(ctx).If(cmp).Then(ops...).Commit()
	if err != nil {
		return nil, unavailable("txn if held", err)
	}
	if !resp.Succeeded {
		return resp, ErrKeyGone
	}
	return resp, nil
}
