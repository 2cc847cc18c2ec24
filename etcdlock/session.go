package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
)

// session is one etcd lease shared by the locks and waiters of a Locker
// that use the same TTL, as a concurrency.Session is shared by Mutexes. One
// goroutine renews it every TTL/10 (and on demand) and keeps its local
// deadline: the send time of the last renewed keepalive plus the TTL minus
// the drift allowance; the server keeps the lease at least that long. When
// the lease is not renewed by then, or the server says it is gone, the
// session dies: every lock on it is lost and every waiter on it returns.
type session struct {
	l   *Locker
	ttl time.Duration

	ready    chan struct{} // closed once granted (or failed)
	grantErr error         // set before ready closes
	id       clientv3.LeaseID
	hex      string // the lease ID as concurrency.Mutex writes it
	kick     chan struct{}

	// Guarded by l.mu.
	keys    map[string]bool      // keys in use: held, queued or being cleaned up
	locks   map[*driver]struct{} // held locks, to be told when the session dies
	retired bool                 // takes no new keys; revoked once unused
	tainted map[string]bool      // keys a timed-out write may still create
	idleAt  time.Time            // when keys last became empty

	mu       sync.Mutex
	deadline time.Time // local, conservative
	lastSent time.Time // send time of the last keepalive (or grant)
	cur      *round    // the last round started
	next     *round    // a round someone waits for, not started yet
	dead     chan struct{}
	deadErr  error
}

// round is one keepalive: sent is when its first try was sent.
type round struct {
	sent time.Time
	done chan struct{}
	err  error // set before done closes; nil: renewed
}

func newRound() *round { return &round{done: make(chan struct{})} }

// wait waits for r (bounded by d), the session's death or ctx.
func (r *round) wait(ctx context.Context, s *session, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.done:
		return r.err
	case <-s.dead:
		return s.err()
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return errors.New("keepalive still in flight")
	}
}

// err is why the session died (nil while alive).
func (s *session) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadErr
}

func (s *session) isDead() bool { return s.err() != nil }

// deadlineNow is the session's current local deadline.
func (s *session) deadlineNow() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadline
}

// renewInterval is how often a session is renewed: every TTL/10, so that
// a lock granted at any moment starts with at least 0.9 TTL of session
// deadline ahead without waiting for a keepalive of its own (one costs a
// round trip to the leader; a keepalive is not a Raft write).
func renewInterval(ttl time.Duration) time.Duration { return max(ttl/10, time.Millisecond) }

// staleAfter is how old the last keepalive may be when a lock is granted
// before the grant sends one of its own and waits for it (keepalives are
// late or failing).
func staleAfter(ttl time.Duration) time.Duration { return ttl / 4 }

// fresh reports whether the last keepalive (or the grant) was sent at or
// after t - slack.
func (s *session) fresh(t time.Time, slack time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.lastSent.Before(t.Add(-slack))
}

// renewAfter returns a keepalive round sent at or after t: the last one if
// it was, else the next one, which it asks the session's goroutine to send
// now.
func (s *session) renewAfter(t time.Time) *round {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil && !s.cur.sent.Before(t) {
		return s.cur
	}
	if s.next == nil {
		s.next = newRound()
		if s.deadErr != nil {
			s.next.err = s.deadErr
			close(s.next.done)
		}
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
	return s.next
}

// session returns a live session for ttl on which key is not in use, and
// reserves key on it; it grants a new lease if there is none. Two
// acquisitions of one key by one Locker use two leases, hence two etcd
// keys (with one, they would share the key and both believe they hold it,
// as two Mutexes on one concurrency.Session do).
func (l *Locker) session(ctx context.Context, ttl time.Duration, key string) (*session, error) {
	for {
		if l.lc.Closed() {
			return nil, distlock.ErrClosed
		}
		l.mu.Lock()
		var s *session
		for _, c := range l.sessions[ttl] {
			if !c.retired && !c.keys[key] && !c.isDead() {
				s = c
				break
			}
		}
		create := s == nil
		if create {
			s = &session{l: l, ttl: ttl, ready: make(chan struct{}), kick: make(chan struct{}, 1),
				keys: map[string]bool{}, locks: map[*driver]struct{}{}, tainted: map[string]bool{}, dead: make(chan struct{})}
			l.sessions[ttl] = append(l.sessions[ttl], s)
		}
		s.keys[key] = true
		l.mu.Unlock()
		if create {
			s.grant(ctx)
		} else {
			select {
			case <-s.ready:
			case <-ctx.Done():
				l.detach(s, key)
				return nil, ctx.Err()
			}
		}
		if s.grantErr == nil {
			return s, nil
		}
		l.detach(s, key)
		if create {
			return nil, s.grantErr
		}
	}
}

// grant creates the etcd lease and starts the renewing goroutine; on
// failure it records the error and drops the session.
func (s *session) grant(ctx context.Context) {
	l := s.l
	defer close(s.ready)
	sent := time.Now()
	gctx, cancel := context.WithTimeout(ctx, l.opts.tryTimeout(s.ttl))
	resp, err := l.cli.Grant(gctx, leaseSeconds(s.ttl))
	cancel()
	if err == nil && resp.TTL*int64(time.Second) < int64(s.ttl) {
		err = fmt.Errorf("server granted %ds, less than the TTL %v", resp.TTL, s.ttl)
	}
	if err == nil && l.lc.Closed() {
		err = distlock.ErrClosed
	}
	if err != nil {
		s.grantErr = unavailable("grant lease", err)
		if r := l.refused(ctx, err); r != nil {
			s.grantErr = r
		}
		l.mu.Lock()
		s.dropLocked()
		l.mu.Unlock()
		if resp != nil && resp.ID != 0 {
			l.revokeLater(resp.ID)
		}
		return
	}
	l.succeeded()
	s.id = resp.ID
	s.hex = fmt.Sprintf("%x", int64(resp.ID))
	s.mu.Lock()
	s.lastSent, s.deadline = sent, sent.Add(s.ttl-drift(s.ttl))
	s.cur = &round{sent: sent, done: make(chan struct{})}
	close(s.cur.done)
	s.mu.Unlock()
	l.mu.Lock()
	s.idleAt = time.Now()
	l.mu.Unlock()
	if !l.lc.Go(s.run) { // Close began after the check above
		s.grantErr = unavailable("grant lease", distlock.ErrClosed)
		s.closeDown()
	}
}

// dropLocked removes s from its pool; l.mu is held.
func (s *session) dropLocked() {
	ss := s.l.sessions[s.ttl]
	for i, c := range ss {
		if c == s {
			s.l.sessions[s.ttl] = append(ss[:i:i], ss[i+1:]...)
			break
		}
	}
	if len(s.l.sessions[s.ttl]) == 0 {
		delete(s.l.sessions, s.ttl)
	}
}

// detach frees key on s (its etcd key is gone or was never written).
func (l *Locker) detach(s *session, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(s.keys, key)
	if len(s.keys) == 0 {
		s.idleAt = time.Now()
		select {
		case s.kick <- struct{}{}: // let the loop revoke it if it is done
		default:
		}
	}
}

// retire stops new acquisitions from using s, after a write on key whose
// outcome is unknown: a request stuck in a frozen member could still
// create the key later. The session deletes the entries of such keys at
// each renewal while it lives (see sweep) and is revoked (deleting every
// key on it) once nothing uses it.
func (l *Locker) retire(s *session, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s.retired = true
	s.tainted[key] = true
}

// revokeLater revokes a lease granted for nothing (its grant raced with
// Close or failed after the server granted it) in the background; once
// Close has begun it does nothing, and the lease expires after its TTL.
func (l *Locker) revokeLater(id clientv3.LeaseID) {
	l.lc.Go(func() {
		ctx, cancel := context.WithTimeout(l.lc.Closing().Context(), l.opts.RequestTimeout)
		defer cancel()
		_, _ = l.cli.Revoke(ctx, id)
	})
}
