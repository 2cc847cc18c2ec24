package etcdlock

import (
	"context"
	"errors"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// entry is one queued entry: its etcd key and create revision.
type entry struct {
	key string
	rev int64
}

// queued is the outcome of an enqueue.
type queued struct {
	my   string // the caller's entry
	rev  int64  // its create revision
	pred *entry // the entry just ahead of it, nil if none; rev 0: unknown, read the queue
	read int64  // the revision pred was read at
}

// enqueue writes the caller's entry on s in the lock of key, valued
// value (entryValue: the token and label), unless an earlier try of the
// same call wrote it, and reads the entry just ahead of it, in one
// transaction. A try that fails is retried as l.do allows (until,
// tries). Every try is create-only (the entry's create revision must be
// 0) and the create revision the caller waits with is the one the
// answering try wrote or read, never assumed. A try
// cannot tell an entry that was never written from one an earlier try
// wrote and an operator deleted since: it writes it again, behind every
// entry then queued. A try that timed out may still reach the server
// later and create the entry again after a deletion; its create revision
// then differs, and the queue reads count the entry as gone (queueRead). On failure the entry is abandoned (see
// abandon), the error is returned as is, and maybe reports that a try
// failed after it may have reached a server: the entry may still be
// written later. An entry of s that does not hold value belongs to
// another acquisition: enqueue touches nothing and returns an error
// matching distlock.ErrUnavailable (see adoptable).
func (l *Locker) enqueue(ctx context.Context, s *session, key, value string, until time.Time, tries int) (q queued, maybe bool, err error) {
	pfx, my := l.prefix(key), l.etcdKey(key, s)
	var resp *clientv3.TxnResponse
	try := 0
	maybe, err = l.do(ctx, s.ttl, until, tries, s.dead, func(ctx context.Context) error {
		if try++; testHookEnqueueTry != nil {
			testHookEnqueueTry(try)
		}
		var err error
		resp, err = l.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(my), "=", 0)).
			Then(clientv3.OpPut(my, value, clientv3.WithLease(s.id)),
				clientv3.OpGet(pfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(2))).
			Else(clientv3.OpGet(my), clientv3.OpGet(pfx, clientv3.WithFirstCreate()...)).
			Commit()
		return err
	})
	if err != nil {
		l.abandon(s, key, 0)
		return queued{}, maybe, err
	}
	q = queued{my: my, read: resp.Header.Revision}
	if resp.Succeeded {
		q.rev = resp.Header.Revision
		if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 2 {
			q.pred = &entry{string(kvs[1].Key), kvs[1].CreateRevision}
			if !isEntry(pfx, kvs[1].Key) {
				q.pred.rev = 0 // a key of a longer key's lock: find this lock's own
			}
		}
		return q, maybe, nil
	}
	mine := resp.Responses[0].GetResponseRange().Kvs
	if len(mine) == 0 { // cannot happen: the compare saw it
		l.abandon(s, key, 0)
		return queued{}, true, errors.New("entry vanished")
	}
	if err := adoptable(mine[0].Value, value, "enqueue", my); err != nil {
		return queued{}, maybe, err
	}
	q.rev = mine[0].CreateRevision
	if first := resp.Responses[1].GetResponseRange().Kvs; len(first) > 0 && first[0].CreateRevision != q.rev {
		q.pred = &entry{string(first[0].Key), 0} // some key is ahead: read the entry just ahead
	}
	return q, maybe, nil
}

// queueState is what a queue read found.
type queueState struct {
	revision int64  // the revision it read at
	mine     bool   // the waiter's entry exists, with the create revision it was queued at
	ahead    *entry // the entry just ahead of it, nil if none
}

// queueRead reads the waiter's own entry my (created at rev) and the entry
// just ahead of it, through the leader (linearizable). The entry counts as
// the waiter's only with create revision rev: one created again after a
// deletion (by a try of the enqueue that reached the server late) is
// behind entries queued meanwhile, and the entries ahead of rev are not
// all the entries ahead of it. After the watch saw
// the entry ahead deleted at revision gone (> 0), it first reads the
// member's own state, without the leader's round (serializable): an entry
// ahead can only go, never come (a new entry is created behind every
// existing one), so a committed state at revision gone or later that shows
// none ahead proves that none is left. If the member has not applied gone
// yet, or shows an entry ahead or none of ours, the linearizable read
// decides.
//
// The read asks for the last key created before my. If that key belongs to
// a longer key's lock (see isEntry), it reads again, every key under the
// prefix created before my (names and revisions only), to find the entry.
func (l *Locker) queueRead(ctx context.Context, pfx, my string, rev, gone int64) (queueState, error) {
	read := func(opts ...clientv3.OpOption) (queueState, error) {
		st, all, err := l.readAhead(ctx, pfx, my, rev, false, opts)
		if err == nil && !all {
			st, _, err = l.readAhead(ctx, pfx, my, rev, true, opts)
		}
		return st, err
	}
	if gone > 0 {
		st, err := read(clientv3.WithSerializable())
		if err == nil && st.revision >= gone && st.mine && st.ahead == nil {
			return st, nil
		}
	}
	return read()
}

// readAhead is one read of queueRead: of the last key created under pfx
// before rev or, with every, of all of them. all reports whether the read
// decided: it found the entry ahead, or it saw every key ahead.
func (l *Locker) readAhead(ctx context.Context, pfx, my string, rev int64, every bool, opts []clientv3.OpOption) (st queueState, all bool, err error) {
	ahead := append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(rev-1))
	if every {
		ahead = []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithMaxCreateRev(rev - 1),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend)}
	}
	resp, err := l.cli.Txn(ctx).Then(
		clientv3.OpGet(my, opts...),
		clientv3.OpGet(pfx, append(ahead, opts...)...),
	).Commit()
	if err != nil {
		return queueState{}, false, err
	}
	mine := resp.Responses[0].GetResponseRange().Kvs
	st = queueState{revision: resp.Header.Revision, mine: len(mine) > 0 && mine[0].CreateRevision == rev}
	kvs := resp.Responses[1].GetResponseRange().Kvs
	for _, kv := range kvs {
		if isEntry(pfx, kv.Key) {
			st.ahead = &entry{string(kv.Key), kv.CreateRevision}
			break
		}
	}
	return st, every || st.ahead != nil || len(kvs) == 0, nil
}

// testHookEnqueueTry, set by tests only (nil in production), runs before
// each try of an enqueue, with the try's number (from 1).
var testHookEnqueueTry func(try int)
