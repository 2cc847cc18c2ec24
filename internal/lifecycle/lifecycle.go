// Package lifecycle is the open/closed state every Locker shares: the
// closed flag, the accounting of calls and goroutines in flight, the
// closing signal background work derives its contexts from, the watchdog
// group of the leases handed out, and the one order in which Close shuts
// them down.
//
// A backend embeds a Lifecycle in its Locker, brackets every public call
// with Enter and Leave, starts every goroutine with Go, and implements
// Close with one call to Close. The Lifecycle's mutex may also guard the
// backend's own state that must change atomically with the closed flag
// (for example the set of blocked waiters Close wakes): take it with Lock
// and read the flag with ClosedLocked.
package lifecycle

import (
	"sync"

	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/stop"
)

// Lifecycle is a Locker's open/closed state. The zero value is not ready:
// call Init once before use (New of the backend does).
type Lifecycle struct {
	mu        sync.Mutex
	closed    bool
	wg        sync.WaitGroup // calls in flight and goroutines started by Go
	closing   *stop.Signal
	finished  chan struct{} // closed when the first Close has finished
	watchdogs lease.Group
}

// Init makes the zero Lifecycle ready: open, nothing in flight.
func (c *Lifecycle) Init() { c.closing, c.finished = stop.New(), make(chan struct{}) }

// Lock takes the Lifecycle's mutex, which guards the closed flag and any
// backend state the backend chooses to guard with it.
func (c *Lifecycle) Lock() { c.mu.Lock() }

// Unlock releases the mutex taken by Lock.
func (c *Lifecycle) Unlock() { c.mu.Unlock() }

// ClosedLocked reports whether Close has begun; the caller holds Lock.
func (c *Lifecycle) ClosedLocked() bool { return c.closed }

// Closed reports whether Close has begun.
func (c *Lifecycle) Closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Enter registers a call in flight; it reports false, and registers
// nothing, once Close has begun. Every true return must be matched by
// Leave. Close waits for every registered call to leave.
func (c *Lifecycle) Enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enterLocked()
}

// EnterLocked is Enter for a caller that holds Lock.
func (c *Lifecycle) EnterLocked() bool { return c.enterLocked() }

func (c *Lifecycle) enterLocked() bool {
	if c.closed {
		return false
	}
	c.wg.Add(1)
	return true
}

// Leave ends a call registered by Enter.
func (c *Lifecycle) Leave() { c.wg.Done() }

// Go runs f on a goroutine Close waits for; it reports false, and runs
// nothing, once Close has begun. f must return soon after Closing fires.
func (c *Lifecycle) Go(f func()) bool {
	if !c.Enter() {
		return false
	}
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// Closing is the signal Close fires; background work derives the context
// of each call it makes from Closing().Context().
func (c *Lifecycle) Closing() *stop.Signal { return c.closing }

// Watchdogs is the group the Locker's leases register their watchdogs in
// (lease.Config.Group); Close stops them.
func (c *Lifecycle) Watchdogs() *lease.Group { return &c.watchdogs }

// Hooks are the backend's parts of Close, each optional.
type Hooks struct {
	// WakeLocked runs under Lock right after the closed flag is set: it
	// wakes the Locker's blocked waiters, which then see the flag.
	WakeLocked func()
	// Shut runs after the watchdogs have stopped and the closing signal
	// has fired, before Close waits for calls in flight: it closes what
	// those calls may be blocked on (connections, subscriptions, sessions).
	Shut func()
	// Release runs last, once nothing is in flight: it frees what the
	// Locker owns (a client opened from a URL, a connection pool).
	Release func()
}

// Close shuts the Locker down in one fixed order and reports whether this
// call did it (false: Close had begun already; then it runs nothing and
// returns once the first Close has finished):
//
//  1. under Lock, set the closed flag (Enter and Go refuse from now on)
//     and run h.WakeLocked;
//  2. stop every lease watchdog and wait for it (an extension in flight
//     is cancelled; leases stay held until their validity passes);
//  3. fire the closing signal, cancelling background contexts;
//  4. run h.Shut;
//  5. wait for every call and goroutine registered by Enter or Go;
//  6. run h.Release.
//
// Close must not be called with Lock held, nor from a call registered by
// Enter or Go (it would wait for itself).
func (c *Lifecycle) Close(h Hooks) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.finished
		return false
	}
	c.closed = true
	if h.WakeLocked != nil {
		h.WakeLocked()
	}
	c.mu.Unlock()
	c.watchdogs.Close()
	c.closing.Fire()
	if h.Shut != nil {
		h.Shut()
	}
	c.wg.Wait()
	if h.Release != nil {
		h.Release()
	}
	close(c.finished)
	return true
}
