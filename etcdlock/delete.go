package etcdlock

import (
	"context"
	"errors"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
)

// giveUp deletes the entry of a waiter that stops waiting: at once if the
// cluster answers within a try timeout, else in the background. rev is
// the entry's create revision, or 0 for whatever entry the session has in
// the lock (one that a late try of the enqueue created again).
func (l *Locker) giveUp(ctx context.Context, s *session, key string, rev int64) {
	if err := s.err(); err != nil && !errors.Is(err, distlock.ErrClosed) {
		l.detach(s, key) // the lease expired or was revoked: its entry went with it
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.tryTimeout(s.ttl))
	defer cancel()
	stop := make(chan struct{})
	close(stop) // one try only
	my := l.etcdKey(key, s)
	_, err := l.do(cctx, s.ttl, time.Time{}, 0, stop, func(ctx context.Context) error {
		if rev == 0 {
			_, err := l.cli.Delete(ctx, my)
			return err
		}
		_, err := l.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(my), "=", rev)).
			Then(clientv3.OpDelete(my)).Commit()
		return err
	})
	if err == nil {
		l.detach(s, key)
		return
	}
	l.abandon(s, key, rev)
}

// abandon gives up an entry of key on s whose create revision is rev (0:
// unknown, or a write that may still land): it deletes the entry in the
// background, retrying until it is gone, the session dies or the Locker
// closes, and then frees the key on s. If a write on the entry may still be
// in flight, the session is retired first (see retire).
func (l *Locker) abandon(s *session, key string, rev int64) {
	if rev == 0 {
		l.retire(s, key)
	}
	// Once Close has begun nothing is started: Close revokes unused
	// leases; the others expire.
	l.lc.Go(func() { l.deleteEntry(l.lc.Closing().Context(), s, key, rev) })
}

// deleteEntry deletes the entry of key on s, retrying, then frees the key
// on s. It reports what it found (see deletion): whether the entry it
// deleted was ours (created at rev, or any entry if rev is 0, not known),
// or, when it found the entry gone, whether an earlier try whose reply
// was lost may have deleted it.
//
// It sends a plain delete, as concurrency.Mutex's Unlock does, rather than
// a compare-and-delete transaction (a transaction costs etcd more work),
// and learns from the previous value whether the entry was ours. A plain delete is safe
// because no other entry of key can exist on s while this call runs: the
// key stays reserved on s (no other acquisition of key uses s) until this
// call frees it, after a delete known to have been applied, or once s is
// dead (a dead session is never used again, and its entries go with its
// lease). One hazard
// remains: a try that timed out may still be applied later, after the key
// is freed and a newer acquisition on s created its entry again. So when
// any try's outcome is unknown, s is retired for key first (never used
// again for it), and that late delete can only find nothing.
func (l *Locker) deleteEntry(ctx context.Context, s *session, key string, rev int64) (deletion, error) {
	my := l.etcdKey(key, s)
	var resp *clientv3.DeleteResponse
	maybe, err := l.do(ctx, s.ttl, time.Time{}, 0, s.dead, func(ctx context.Context) error {
		var err error
		resp, err = l.cli.Delete(ctx, my, clientv3.WithPrevKV())
		if err == nil && testHookDeleted != nil {
			err = testHookDeleted()
		}
		return err
	})
	if maybe {
		l.retire(s, key) // a timed-out delete may land after a newer entry of key on s
	}
	if err != nil && !s.isDead() {
		return deletedGone, err // the key stays reserved: the entry may exist
	}
	l.detach(s, key)
	switch {
	case err != nil:
		return deletedGone, nil // the session died: its keys go with its lease
	case len(resp.PrevKvs) > 0 && (rev == 0 || resp.PrevKvs[0].CreateRevision == rev):
		return deletedOurs, nil
	case len(resp.PrevKvs) == 0 && maybe:
		return deletedMaybe, nil // perhaps by a try whose reply was lost
	default:
		return deletedGone, nil // gone already (expired with the lease, or deleted)
	}
}

// deletion is what deleteEntry found.
type deletion int

const (
	// deletedGone: the entry was gone (or not ours, or the session died).
	deletedGone deletion = iota
	// deletedOurs: it deleted the entry created at rev.
	deletedOurs
	// deletedMaybe: the entry was gone, and an earlier try whose reply was
	// lost (a timeout, a dropped connection) may have deleted it.
	deletedMaybe
)

// testHookDeleted, set by tests only (nil in production), runs after each
// delete the server answered; an error it returns replaces the answer, as
// if the reply had been lost.
var testHookDeleted func() error
