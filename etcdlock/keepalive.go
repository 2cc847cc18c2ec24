package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/retry"
)

// The keepalive loop of a session: one goroutine per session renews its
// etcd lease, deletes the entries a late write may have left (sweep), and
// ends the session when it dies, runs out of use, or the Locker closes.

// run renews the lease until the session dies, the Locker closes, or the
// session is unused (idle for a TTL, or retired): then it revokes it.
func (s *session) run() {
	l := s.l
	interval := renewInterval(s.ttl)
	for {
		s.mu.Lock()
		due := time.Until(s.lastSent.Add(interval))
		wanted := s.next != nil
		s.mu.Unlock()
		if wanted || due <= 0 {
			if !s.renew() {
				return
			}
			continue
		}
		l.mu.Lock()
		idle := len(s.keys) == 0 && len(s.locks) == 0
		idleFor := time.Since(s.idleAt)
		retired := s.retired
		if idle && (retired || idleFor >= s.ttl) {
			s.dropLocked()
		}
		l.mu.Unlock()
		if idle && (retired || idleFor >= s.ttl) {
			s.die(errors.New("unused"), true)
			return
		}
		if idle {
			due = min(due, s.ttl-idleFor)
		}
		t := time.NewTimer(due)
		select {
		case <-l.lc.Closing().Done():
			t.Stop()
			s.closeDown()
			return
		case <-s.kick:
		case <-t.C:
		}
		t.Stop()
	}
}

// renew sends one keepalive round, retrying tries that fail (each on the
// member the client picks next) until the local deadline. It reports
// whether the session is still alive.
func (s *session) renew() bool {
	l := s.l
	s.mu.Lock()
	r := s.next
	if r == nil {
		r = newRound()
	}
	s.next = nil
	r.sent = time.Now()
	s.cur, s.lastSent = r, r.sent
	dl := s.deadline
	s.mu.Unlock()
	var err error
	for {
		tdl := time.Now().Add(l.opts.keepAliveTimeout(s.ttl))
		if dl.Before(tdl) {
			tdl = dl
		}
		tctx, cancel := context.WithDeadline(l.lc.Closing().Context(), tdl)
		_, err = l.cli.KeepAliveOnce(tctx, s.id)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			err = ErrLeaseNotFound
		case l.lc.Closing().Fired():
			err = errClosedKeepAlive
		case !time.Now().Before(dl):
			err = fmt.Errorf("%w: keepalives failed for a TTL (last: %v)", ErrSessionExpired, err)
		default:
			_ = retry.Wait(l.lc.Closing().Context(), 5*time.Millisecond, nil)
			continue
		}
		break
	}
	if err != nil {
		s.mu.Lock()
		r.err = err
		close(r.done)
		s.mu.Unlock()
		l.mu.Lock()
		s.dropLocked()
		unused := len(s.keys) == 0 && len(s.locks) == 0
		l.mu.Unlock()
		s.die(err, unused || !errors.Is(err, errClosedKeepAlive))
		return false
	}
	s.mu.Lock()
	if vu := r.sent.Add(s.ttl - drift(s.ttl)); vu.After(s.deadline) {
		s.deadline = vu
	}
	close(r.done)
	s.mu.Unlock()
	s.sweep()
	return true
}

// sweep deletes the entries of the tainted keys no acquisition uses any
// more, at every renewal for as long as the session lives: a write that
// timed out may reach the server at any later time and create such an
// entry again, which would then block its key while the session lives.
// Deleting them is safe because a retired session takes no new keys, so
// once a tainted key is unused, no entry of it on the session is anyone's.
// The deletes go in transactions of at most sweepBatch operations, one try
// each; a failed one is retried at the next renewal.
func (s *session) sweep() {
	l := s.l
	l.mu.Lock()
	var ops []clientv3.Op
	for k := range s.tainted {
		if !s.keys[k] {
			ops = append(ops, clientv3.OpDelete(l.etcdKey(k, s)))
		}
	}
	l.mu.Unlock()
	for len(ops) > 0 {
		n := min(len(ops), sweepBatch)
		ctx, cancel := context.WithTimeout(l.lc.Closing().Context(), l.opts.tryTimeout(s.ttl))
		_, _ = l.cli.Txn(ctx).Then(ops[:n]...).Commit()
		cancel()
		ops = ops[n:]
	}
}

// sweepBatch is the most deletes sweep sends in one transaction (etcd's
// default limit on the operations of a transaction is 128).
const sweepBatch = 64

// die ends the session with cause: waiters on it return, its locks are
// lost (unless it just ran out of use), and with revoke the lease is
// revoked (its keys deleted) in the background of this goroutine.
func (s *session) die(cause error, revoke bool) {
	l := s.l
	s.mu.Lock()
	if s.deadErr != nil {
		s.mu.Unlock()
		return
	}
	s.deadErr = cause
	close(s.dead)
	if s.next != nil {
		s.next.err = cause
		close(s.next.done)
		s.next = nil
	}
	s.mu.Unlock()
	l.mu.Lock()
	locks := make([]*driver, 0, len(s.locks))
	for d := range s.locks {
		locks = append(locks, d)
	}
	l.mu.Unlock()
	for _, d := range locks {
		d.lose(cause)
	}
	if revoke {
		ctx, cancel := context.WithTimeout(context.Background(), l.opts.tryTimeout(s.ttl))
		_, _ = l.cli.Revoke(ctx, s.id)
		cancel()
	}
}

// closeDown ends the session because the Locker is closing: its locks are
// lost, and its lease is revoked if nothing uses it.
func (s *session) closeDown() {
	s.l.mu.Lock()
	unused := len(s.keys) == 0 && len(s.locks) == 0
	s.l.mu.Unlock()
	s.die(errClosedKeepAlive, unused)
}
