package leader

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock"
)

// errPanicked is the Err of the SteppedDown event of a term whose work
// panicked.
var errPanicked = errors.New("leader: the work panicked")

// term is the state of one term in progress.
type term struct {
	info     Term
	lease    distlock.Lease
	ctx      context.Context // the work's
	cancel   context.CancelCauseFunc
	resigned bool          // Resign was called; guarded by Candidate.mu
	released chan struct{} // closed once the key is released
	over     atomic.Bool   // the end of the term was reported
}

// leading reports whether the term still holds leadership.
func (t *term) leading() bool {
	if t.over.Load() || t.ctx.Err() != nil {
		return false
	}
	select {
	case <-t.lease.Done():
		return false
	default:
		return true
	}
}

// result is how one campaign ended.
type result struct {
	elected  bool          // a term began
	resigned bool          // Resign ended it
	lasted   time.Duration // how long the term lasted
	err      error         // the acquisition's error, or the term's
}

// campaign acquires the election key (distlock.Do, waiting), runs one
// term and releases the key.
func (c *Candidate) campaign(ctx context.Context) (r result) {
	var t *term
	defer func() {
		if t == nil {
			return
		}
		c.mu.Lock()
		c.cur = nil
		r.resigned = t.resigned
		c.mu.Unlock()
		close(t.released)
		r.elected, r.lasted = true, time.Since(t.info.Start)
	}()
	r.err = distlock.Do(ctx, c.locker, c.key, func(dctx context.Context, lease distlock.Lease) error {
		t = c.begin(dctx, lease)
		return c.serve(t)
	}, c.cfg.lockOpts...)
	return r
}

// begin makes lease the current term, with the work's context derived
// from dctx (cancelled by Do when the lease is lost), and reports Elected.
func (c *Candidate) begin(dctx context.Context, lease distlock.Lease) *term {
	t := &term{
		info:     Term{Key: c.key, Fence: lease.Fence(), Start: time.Now()},
		lease:    lease,
		released: make(chan struct{}),
	}
	t.ctx, t.cancel = context.WithCancelCause(dctx)
	c.mu.Lock()
	c.cur = t
	c.mu.Unlock()
	c.emit(Event{Kind: Elected, Term: t.info})
	return t
}

// serve runs the work for t. The end of the term is reported once: when
// the work's context is cancelled (by the goroutine context.AfterFunc
// starts, which serve joins, or by serve itself when the work returned
// first) or else when the work returns.
func (c *Candidate) serve(t *term) (err error) {
	ended := make(chan struct{})
	stop := context.AfterFunc(t.ctx, func() {
		defer close(ended)
		cause := context.Cause(t.ctx)
		c.end(t, kindOf(cause), cause)
	})
	returned := false
	defer func() {
		if stop() {
			k, why := SteppedDown, err
			switch {
			case !returned:
				why = errPanicked
			case t.ctx.Err() != nil:
				// Cancelled, but the work returned before the watcher
				// ran: the end is why the context ended.
				cause := context.Cause(t.ctx)
				k, why = kindOf(cause), cause
			}
			c.end(t, k, why)
		} else {
			<-ended
		}
		t.cancel(context.Canceled)
	}()
	err = c.work(t.ctx, t.info)
	returned = true
	return err
}

// end reports the end of t.
func (c *Candidate) end(t *term, k Kind, err error) {
	t.over.Store(true)
	c.emit(Event{Kind: k, Term: t.info, Err: err})
}

// kindOf says which end a cancellation cause of the work's context means.
func kindOf(cause error) Kind {
	switch {
	case errors.Is(cause, ErrResigned):
		return Resigned
	case errors.Is(cause, distlock.ErrLeaseLost):
		return Lost
	}
	return SteppedDown
}
