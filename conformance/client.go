package conformance

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/distlock/distlock"
)

// acquireReq is one acquisition request of a scenario.
type acquireReq struct {
	Try        bool
	TTL        time.Duration
	AutoExtend time.Duration // > 0: WithAutoExtend(AutoExtend)
	RetryMax   time.Duration // > 0: WithRetryDelay(RetryMax/10, RetryMax)
}

func (r acquireReq) options() []distlock.Option {
	opts := []distlock.Option{distlock.WithTTL(r.TTL)}
	if r.AutoExtend > 0 {
		opts = append(opts, distlock.WithAutoExtend(r.AutoExtend))
	}
	if r.RetryMax > 0 {
		opts = append(opts, distlock.WithRetryDelay(max(r.RetryMax/10, time.Millisecond), r.RetryMax))
	}
	return opts
}

// grant is what a client learned from a successful acquisition.
type grant struct {
	Fence      uint64
	Token      string
	ValidUntil time.Time // on the wall clock of the test process
	Call, Ret  int64
}

// contender is one client of a scenario, in this process or a worker
// process. It holds at most one lease and records every acquisition and
// every end of a section into the history.
type contender interface {
	ID() int
	Acquire(ctx context.Context, key string, req acquireReq) (grant, error)
	// Lost reports whether the held lease is known lost, and when the
	// client learned it (unix nanos): when it saw Done close, or the
	// lease's last ValidUntil if that came first (a live holder knows its
	// lease ends there, whatever the notification's scheduling delay).
	Lost() (bool, int64)
	// Release ends the section: recorded as OpLost if the client already
	// knew the lease was lost, else OpRelease.
	Release(ctx context.Context) error
	Extend(ctx context.Context, ttl time.Duration) error
}

func outcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, distlock.ErrNotAcquired) && !errors.Is(err, distlock.ErrUnavailable),
		errors.Is(err, distlock.ErrInvalidArgument), errors.Is(err, distlock.ErrClosed):
		return OutcomeFail
	default:
		return OutcomeUnknown
	}
}

// local is a contender in this process.
type local struct {
	id     int
	locker distlock.Locker
	hist   *History

	mu     sync.Mutex
	lease  distlock.Lease
	key    string
	lostAt int64         // when the holder learned of the loss: min(Done seen, ValidUntil)
	doneAt int64         // when the watcher saw Done close
	watch  chan struct{} // closed by the Done watcher when it has stamped lostAt
	stop   chan struct{}
}

func newLocal(id int, l distlock.Locker, h *History) *local {
	return &local{id: id, locker: l, hist: h}
}

func (c *local) ID() int { return c.id }

func (c *local) Acquire(ctx context.Context, key string, req acquireReq) (grant, error) {
	call := time.Now().UnixNano()
	var l distlock.Lease
	var err error
	if req.Try {
		l, err = c.locker.TryAcquire(ctx, key, req.options()...)
	} else {
		l, err = c.locker.Acquire(ctx, key, req.options()...)
	}
	ret := time.Now().UnixNano()
	op := Op{Client: c.id, Key: key, Kind: OpAcquire, Outcome: outcomeOf(err), Call: call, Return: ret}
	if err != nil {
		c.hist.Add(op)
		return grant{}, err
	}
	op.Fence = l.Fence()
	c.hist.Add(op)
	c.mu.Lock()
	c.lease, c.key, c.lostAt, c.doneAt = l, key, 0, 0
	c.watch, c.stop = make(chan struct{}), make(chan struct{})
	watch, stop := c.watch, c.stop
	c.mu.Unlock()
	go func() { // owned: ends when Done fires or the section ends
		defer close(watch)
		select {
		case <-l.Done():
			c.stampLoss(l)
		case <-stop:
		}
	}()
	return grant{Fence: l.Fence(), Token: l.Token(), ValidUntil: l.ValidUntil(), Call: call, Ret: ret}, nil
}

// stampLoss records when the holder learned its lease was lost, once,
// after Done has closed: the time it saw Done, or the last validity if
// that passed first.
func (c *local) stampLoss(l distlock.Lease) {
	if !errors.Is(l.Err(), distlock.ErrLeaseLost) {
		return
	}
	now := time.Now().UnixNano()
	learned := min(now, l.ValidUntil().UnixNano())
	c.mu.Lock()
	if c.lease == l && c.doneAt == 0 {
		c.doneAt, c.lostAt = now, learned
	}
	c.mu.Unlock()
}

func (c *local) Lost() (bool, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lostAt != 0, c.lostAt
}

// DoneAt reports when the holder saw Done close on a lost lease (0 if it
// has not), for judging how late a lost-lease notification was.
func (c *local) DoneAt() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.doneAt
}

func (c *local) Extend(ctx context.Context, ttl time.Duration) error {
	c.mu.Lock()
	l := c.lease
	c.mu.Unlock()
	if l == nil {
		return errors.New("conformance: extend without a lease")
	}
	return l.Extend(ctx, ttl)
}

func (c *local) Release(ctx context.Context) error {
	c.mu.Lock()
	l, key, stop, watch := c.lease, c.key, c.stop, c.watch
	c.mu.Unlock()
	if l == nil {
		return errors.New("conformance: release without a lease")
	}
	// A loss that happened before this call counts even if the watcher
	// has not run yet: look at Done now, before Release closes it.
	select {
	case <-l.Done():
		c.stampLoss(l)
	default:
	}
	call := time.Now().UnixNano()
	err := l.Release(ctx)
	ret := time.Now().UnixNano()
	close(stop)
	<-watch
	c.mu.Lock()
	lostAt := c.lostAt
	c.lease = nil
	c.mu.Unlock()
	if lostAt != 0 {
		c.hist.Add(Op{Client: c.id, Key: key, Kind: OpLost, Outcome: OutcomeOK, Call: lostAt, Return: lostAt})
	} else {
		c.hist.Add(Op{Client: c.id, Key: key, Kind: OpRelease, Outcome: OutcomeOK, Call: call, Return: ret})
	}
	return err
}
