// Package stop is the stop signal of a Locker's background work. Close
// fires it; work started for the Locker (clean-ups, subscribers,
// keep-alives) derives a context from it for each call it makes, so no
// context is kept in a struct and no goroutine is spent per context: a
// context derived with context.WithCancel or WithTimeout from Context()
// is cancelled by Fire through the AfterFunc hook the context package
// looks for.
package stop

import (
	"context"
	"sync"
	"time"
)

// Signal fires once. The zero Signal is not ready: use New.
type Signal struct {
	done chan struct{}

	mu    sync.Mutex
	fired bool
	hooks map[uint64]func()
	next  uint64
}

// New returns a Signal that has not fired.
func New() *Signal { return &Signal{done: make(chan struct{}), hooks: map[uint64]func(){}} }

// Fire fires the signal: Done closes and every context derived from
// Context is cancelled. Later calls do nothing.
func (s *Signal) Fire() {
	s.mu.Lock()
	if s.fired {
		s.mu.Unlock()
		return
	}
	s.fired = true
	close(s.done)
	hooks := s.hooks
	s.hooks = nil
	s.mu.Unlock()
	for _, f := range hooks {
		f()
	}
}

// Done is closed when the signal fires.
func (s *Signal) Done() <-chan struct{} { return s.done }

// Fired reports whether the signal has fired.
func (s *Signal) Fired() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Context returns a context that is cancelled when the signal fires. It
// has no deadline and no values; derive from it with context.WithTimeout
// or WithCancel for each call.
func (s *Signal) Context() context.Context { return signalContext{s} }

// signalContext is the context view of a Signal. It implements the
// context package's afterFuncer, so children register a hook instead of
// starting a goroutine to watch Done.
type signalContext struct{ s *Signal }

// Deadline, Done, Value and Err implement context.Context: no deadline,
// no values, Done closed and Err context.Canceled once the signal fires.
func (signalContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c signalContext) Done() <-chan struct{}     { return c.s.done }
func (signalContext) Value(any) any               { return nil }

func (c signalContext) Err() error {
	if c.s.Fired() {
		return context.Canceled
	}
	return nil
}

// AfterFunc runs f (in its own goroutine if the signal has already fired,
// else from Fire) and returns a stop function that unregisters it,
// reporting whether it did so before f ran.
func (c signalContext) AfterFunc(f func()) func() bool {
	s := c.s
	s.mu.Lock()
	if s.fired {
		s.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	id := s.next
	s.next++
	s.hooks[id] = f
	s.mu.Unlock()
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		_, ok := s.hooks[id]
		delete(s.hooks, id)
		return ok
	}
}

// String names the context, as the context package's own types do.
func (signalContext) String() string { return "stop.Signal.Context" }
