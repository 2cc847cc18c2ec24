package etcdlock

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/retry"
)

// TryAcquire implements distlock.Locker: one transaction that creates the
// caller's entry only if the lock's prefix is empty, so contention leaves
// no entry behind (concurrency.Mutex.TryLock writes one, then deletes it).
// Keys of the locks of longer keys may lie under the prefix too (that of
// "p/42" under that of "p", see keys.go); when the first key under it is
// one, the transaction cannot tell whether the lock is free, and
// TryAcquire queues an entry as Acquire does, keeps it if no entry of the
// lock is ahead of it, and deletes it otherwise. A try that fails is
// retried (on the member the client picks next), up to one try per
// endpoint, within the TTL. If the key is held the error matches
// distlock.ErrNotAcquired; if the cluster cannot be reached,
// distlock.ErrUnavailable; if the etcd lease the entry was written under
// ended before the lock is granted, ErrSessionExpired (which matches
// distlock.ErrUnavailable). An empty key, a key longer than MaxKeyLen or an
// invalid option returns an error matching distlock.ErrInvalidArgument,
// before any request.
func (l *Locker) TryAcquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.begin(key, opts)
	if err != nil {
		return nil, err
	}
	defer l.lc.Leave()
	if err := retry.Ended(ctx, nil); err != nil {
		return nil, err
	}
	start, s, r, err := l.join(ctx, key, o)
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	pfx, my := l.prefix(key), l.etcdKey(key, s)
	token := lease.NewToken()
	until, tries := start.Add(o.TTL-drift(o.TTL)), len(l.cli.Endpoints())
	var resp *clientv3.TxnResponse
	maybe, err := l.do(ctx, o.TTL, until, tries, s.dead, func(ctx context.Context) error {
		var err error
		resp, err = l.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(pfx), "=", 0).WithPrefix()).
			Then(clientv3.OpPut(my, token, clientv3.WithLease(s.id))).
			Else(clientv3.OpGet(pfx, clientv3.WithFirstCreate()...)).
			Commit()
		return err
	})
	if err != nil {
		l.abandon(s, key, 0) // a try that failed may still create the entry
		return nil, ctxErr(ctx, unavailable("acquire", err))
	}
	rev := resp.Header.Revision
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		switch {
		case len(kvs) > 0 && !isEntry(pfx, kvs[0].Key):
			// A longer key's lock comes first: find this lock's own.
			return l.tryQueued(ctx, s, key, token, start, until, maybe, o, r)
		case len(kvs) == 0 || string(kvs[0].Key) != my: // held by another entry
			if maybe {
				l.abandon(s, key, 0) // an earlier try may still create ours
			} else {
				l.detach(s, key)
			}
			return nil, errHeld(key)
		}
		if err := adoptable(kvs[0].Value, token, "acquire", my); err != nil {
			return nil, err
		}
		rev = kvs[0].CreateRevision // an earlier try of ours created it
	}
	if maybe {
		l.retire(s, key) // a timed-out try could re-create the entry after the release
	}
	return l.grant(ctx, s, key, my, rev, token, start, o, r)
}

// tryQueued is the rest of a TryAcquire whose transaction found a key of a
// longer key's lock first under the prefix: it queues the caller's entry
// (enqueue), reads the entry ahead of it if the enqueue could not tell,
// and grants the lock if there is none. Otherwise it deletes the entry
// (giveUp) and reports the key held. Its requests are bounded as
// TryAcquire's (until, one try per endpoint); maybe: a try of TryAcquire's
// own transaction failed.
func (l *Locker) tryQueued(ctx context.Context, s *session, key, token string, start, until time.Time, maybe bool, o distlock.Options, r *round) (distlock.Lease, error) {
	tries := len(l.cli.Endpoints())
	q, queuedMaybe, err := l.enqueue(ctx, s, key, token, until, tries)
	if err != nil {
		return nil, ctxErr(ctx, unavailable("acquire", err))
	}
	if maybe || queuedMaybe {
		l.retire(s, key) // a timed-out try could re-create the entry after it is deleted
	}
	ahead := q.pred
	if ahead != nil && ahead.rev == 0 {
		var st queueState
		_, err := l.do(ctx, o.TTL, until, tries, s.dead, func(ctx context.Context) error {
			var err error
			st, err = l.queueRead(ctx, l.prefix(key), q.my, q.rev, 0)
			return err
		})
		switch {
		case err != nil:
			l.giveUp(ctx, s, key, q.rev)
			return nil, ctxErr(ctx, unavailable("acquire", err))
		case !st.mine: // deleted, and perhaps created again by a late try of the enqueue
			l.giveUp(ctx, s, key, 0)
			return nil, unavailable("acquire", fmt.Errorf("the entry %s was deleted", q.my))
		}
		ahead = st.ahead
	}
	if ahead != nil {
		l.giveUp(ctx, s, key, q.rev)
		return nil, errHeld(key)
	}
	return l.grant(ctx, s, key, q.my, q.rev, token, start, o, r)
}
