package lease

import (
	"context"
	"sync"
)

// Group owns the watchdogs of one Locker's leases. A Locker's Close calls
// Group.Close, which stops every watchdog still running and waits for it to
// exit, so a closed Locker leaves no goroutine behind. Close does not
// release the leases: each stays held until its validity passes, then ends
// with distlock.ErrLeaseLost (ErrExpired), as the Locker interface says.
//
// The zero Group is ready to use; a nil *Group owns nothing (leases made
// without one stop their watchdog only at Release, loss or MaxHold).
type Group struct {
	mu      sync.Mutex
	closed  bool
	cancels map[*Lease]context.CancelFunc
	wg      sync.WaitGroup
}

// add registers l's watchdog, stopped by cancel; it reports false if the
// Group is closed (then no watchdog may start).
func (g *Group) add(l *Lease, cancel context.CancelFunc) bool {
	if g == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	if g.cancels == nil {
		g.cancels = map[*Lease]context.CancelFunc{}
	}
	g.cancels[l] = cancel
	g.wg.Add(1)
	return true
}

// remove is called by l's watchdog as it exits.
func (g *Group) remove(l *Lease) {
	if g == nil {
		return
	}
	g.mu.Lock()
	delete(g.cancels, l)
	g.mu.Unlock()
	g.wg.Done()
}

// Close stops every running watchdog (an extension in flight is cancelled)
// and waits for all of them to exit. Later leases start no watchdog. Close
// is idempotent; on a nil Group it does nothing.
func (g *Group) Close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.closed = true
	for _, cancel := range g.cancels {
		cancel()
	}
	g.mu.Unlock()
	g.wg.Wait()
}
