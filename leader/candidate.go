package leader

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock"
)

// Work is the leader's work for one term. ctx is cancelled as soon as the
// term ends (see the package documentation for the causes); the work
// should then stop acting as leader and return. Returning ends the term:
// the lease is released and the Candidate campaigns again after its
// backoff.
type Work func(ctx context.Context, term Term) error

// Candidate campaigns for leadership of one election key on one Locker.
// Make one with NewCandidate per process (or per goroutine that should
// compete); its methods are safe for concurrent use.
type Candidate struct {
	locker distlock.Locker
	key    string
	work   Work
	cfg    config

	running atomic.Bool // a Run is in progress

	mu  sync.Mutex
	cur *term // the term in progress, nil between terms; guarded by mu
}

// NewCandidate returns a Candidate that campaigns for key on l and runs
// work while it leads. Nothing happens until Run. A nil l or work, an
// empty key or an invalid Option return an error matching
// distlock.ErrInvalidArgument. Invalid lock options (WithLockOptions) are
// reported by Run.
func NewCandidate(l distlock.Locker, key string, work Work, opts ...Option) (*Candidate, error) {
	switch {
	case l == nil:
		return nil, fmt.Errorf("%w: leader %q: nil Locker", distlock.ErrInvalidArgument, key)
	case work == nil:
		return nil, fmt.Errorf("%w: leader %q: nil work", distlock.ErrInvalidArgument, key)
	}
	if err := distlock.CheckKey(key); err != nil {
		return nil, fmt.Errorf("leader: election key: %w", err)
	}
	cfg, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	return &Candidate{locker: l, key: key, work: work, cfg: cfg}, nil
}

// Key is the election key.
func (c *Candidate) Key() string { return c.key }

// Resign ends the current term: the work's context is cancelled with the
// cause ErrResigned, and once the work has returned the key is released;
// the Candidate campaigns again after the resign delay (WithResignDelay),
// unless Run's context ends first. Resign waits until the key is released
// or ctx ends (then it returns ctx.Err(), wrapped, and the resignation
// goes on). When the Candidate does not lead, Resign does nothing and
// returns nil.
func (c *Candidate) Resign(ctx context.Context) error {
	c.mu.Lock()
	t := c.cur
	if t != nil {
		t.resigned = true
	}
	c.mu.Unlock()
	if t == nil {
		return nil
	}
	t.cancel(ErrResigned)
	select {
	case <-t.released:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("leader %q: resign: waiting for the term to end: %w", c.key, ctx.Err())
	}
}

// IsLeader reports whether the Candidate leads now: it holds the lease
// of a term whose work's context has not been cancelled.
func (c *Candidate) IsLeader() bool {
	_, ok := c.Term()
	return ok
}

// Term returns the current term and true while the Candidate leads (as
// IsLeader), or a zero Term and false.
func (c *Candidate) Term() (Term, bool) {
	c.mu.Lock()
	t := c.cur
	c.mu.Unlock()
	if t == nil || !t.leading() {
		return Term{}, false
	}
	return t.info, true
}

// emit reports ev to the observer, if any.
func (c *Candidate) emit(ev Event) {
	if c.cfg.observer != nil {
		ev.At = time.Now()
		c.cfg.observer(ev)
	}
}
