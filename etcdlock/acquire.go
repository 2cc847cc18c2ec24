package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/retry"
)

// Acquire implements distlock.Locker: it queues an entry under the lock's
// prefix and waits for the entry ahead of it to go (see the package
// documentation). While the cluster cannot be reached it retries after the
// random retry delay. When ctx ends, the error matches
// distlock.ErrNotAcquired and ctx.Err() and keeps the last error; if the
// lease the call waits under ends before the lock is granted (it expired
// because the caller was cut off from the cluster for a TTL, or it was
// revoked), it returns an error matching ErrSessionExpired (and
// distlock.ErrUnavailable) at once, and so it does with
// distlock.ErrAccessDenied or distlock.ErrTLS, which no retry fixes.
// Either way its entry is deleted. An
// empty key, a key longer than MaxKeyLen or an invalid option returns an
// error matching distlock.ErrInvalidArgument, before any request.
func (l *Locker) Acquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := l.begin(key, opts)
	if err != nil {
		return nil, err
	}
	defer l.lc.Leave()
	var last error
	for {
		if err := retry.Ended(ctx, last); err != nil {
			return nil, err
		}
		ls, err := l.acquire(ctx, key, o)
		switch {
		case err == nil:
			return ls, nil
		case ctx.Err() != nil:
			return nil, retry.Ended(ctx, errors.Join(err, last))
		case errors.Is(err, ErrSessionExpired), errors.Is(err, distlock.ErrClosed),
			!errors.Is(err, distlock.ErrUnavailable), isRefusal(err):
			return nil, err
		}
		last = err
		_ = retry.Wait(ctx, retry.Delay(o.RetryMin, o.RetryMax), l.lc.Closing().Done())
	}
}

// begin starts a TryAcquire or Acquire of key: it resolves the call's
// options and checks the key (an error matching
// distlock.ErrInvalidArgument), then registers the call (distlock.ErrClosed
// once Close has begun). A nil error must be matched by l.lc.Leave.
func (l *Locker) begin(key string, opts []distlock.Option) (distlock.Options, error) {
	o, err := l.opts.Lock.ResolveFor(key, opts...)
	if err != nil {
		return o, err
	}
	if err := checkKey(key); err != nil {
		return o, err
	}
	if !l.lc.Enter() {
		return o, distlock.ErrClosed
	}
	return o, nil
}

// join picks the session of an acquisition of key with o's TTL (see
// session), at start; r is a keepalive round sent for it if the session's
// last keepalive is stale, nil otherwise.
func (l *Locker) join(ctx context.Context, key string, o distlock.Options) (start time.Time, s *session, r *round, err error) {
	start = time.Now()
	s, err = l.session(ctx, o.TTL, key)
	if err != nil {
		return start, nil, nil, err
	}
	if !s.fresh(start, staleAfter(o.TTL)) {
		r = s.renewAfter(start)
	}
	return start, s, r, nil
}

// acquire makes one queued acquisition: enqueue, wait, grant.
func (l *Locker) acquire(ctx context.Context, key string, o distlock.Options) (distlock.Lease, error) {
	start, s, r, err := l.join(ctx, key, o)
	if err != nil {
		return nil, err
	}
	token := lease.NewToken()
	q, maybe, err := l.enqueue(ctx, s, key, entryValue(token, o.Label), time.Time{}, 0)
	if err != nil {
		if serr := s.err(); serr != nil {
			return nil, errors.Join(ErrSessionExpired, serr)
		}
		return nil, unavailable("enqueue", err)
	}
	if maybe {
		l.retire(s, key) // a timed-out try could re-create the entry after we delete it
	}
	if q.pred != nil {
		start, r, err = l.wait(ctx, s, key, q.my, q.rev, q.pred, q.read, o)
		if err != nil {
			return nil, err
		}
	}
	return l.grant(ctx, s, key, q.my, q.rev, token, start, o, r)
}

// adoptable returns nil if got, the value of the session's entry my for
// the key, is want, the value this call writes (entryValue: its token and
// label): the entry is an earlier try of this same call.
// Otherwise it is another acquisition's (the key's reservation on the
// session should make that impossible): the caller touches nothing, the
// key stays reserved, and the error matches distlock.ErrUnavailable.
func adoptable(got []byte, want, op, my string) error {
	if string(got) == want {
		return nil
	}
	return unavailable(op, fmt.Errorf("session entry %s belongs to another acquisition", my))
}

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
	value := entryValue(token, o.Label)
	until, tries := start.Add(o.TTL-drift(o.TTL)), len(l.cli.Endpoints())
	var resp *clientv3.TxnResponse
	maybe, err := l.do(ctx, o.TTL, until, tries, s.dead, func(ctx context.Context) error {
		var err error
		resp, err = l.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(pfx), "=", 0).WithPrefix()).
			Then(clientv3.OpPut(my, value, clientv3.WithLease(s.id))).
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
		if err := adoptable(kvs[0].Value, value, "acquire", my); err != nil {
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
	q, queuedMaybe, err := l.enqueue(ctx, s, key, entryValue(token, o.Label), until, tries)
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

// grant makes the lease of an entry that holds the lock. Its validity is
// the acquisition's start plus the TTL minus drift, capped by the
// session's deadline (after the keepalive r, if one was sent for it). If
// the session is dead by then, or dies while the lease is made, grant
// hands out no lease and returns an error matching ErrSessionExpired (and
// distlock.ErrUnavailable) that wraps the session's cause; the entry went
// with the etcd lease, or, if the session died because the Locker closed
// (its etcd lease may live on), grant deletes it (see giveUp).
func (l *Locker) grant(ctx context.Context, s *session, key, my string, rev int64, token string, start time.Time, o distlock.Options, r *round) (distlock.Lease, error) {
	if testHookBeforeGrant != nil {
		testHookBeforeGrant()
	}
	if r != nil {
		_ = r.wait(ctx, s, l.opts.keepAliveTimeout(o.TTL)) // else the current deadline applies
	}
	if err := s.err(); err != nil {
		l.giveUp(ctx, s, key, rev)
		return nil, fmt.Errorf("%w: %w", ErrSessionExpired, err)
	}
	vu := start.Add(o.TTL - drift(o.TTL))
	if sd := s.deadlineNow(); sd.Before(vu) {
		vu = sd
	}
	d := &driver{l: l, s: s, key: key, my: my, rev: rev, ttl: o.TTL, deleting: make(chan struct{}, 1)}
	ls, err := lease.Grant(ctx, lease.Config{
		Key: key, Token: token, Fence: uint64(rev), Start: start, ValidUntil: vu,
		Options: o, Driver: d, Group: l.lc.Watchdogs(),
	})
	if err != nil {
		return nil, err
	}
	if testHookBeforeAttach != nil {
		testHookBeforeAttach()
	}
	d.attach(ls, vu)
	if err := s.err(); err != nil { // it died after the check above: attach reported the lease lost
		d.finish()
		d.forget()
		l.giveUp(ctx, s, key, rev) // deletes the entry if the Locker closed (its lease may live on)
		return nil, fmt.Errorf("%w: %w", ErrSessionExpired, err)
	}
	return ls, nil
}

// testHookBeforeGrant, set by tests only (nil in production), runs at the
// start of grant.
var testHookBeforeGrant func()

// testHookBeforeAttach, set by tests only (nil in production), runs in
// grant after the lease is made, before it is attached to its session.
var testHookBeforeAttach func()
