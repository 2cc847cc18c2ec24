package redlock

import (
	"strconv"
	"sync"
	"time"
)

// waiter is one blocked Acquire call.
type waiter struct {
	id    string // hex, unique in the Locker
	score string // arrival time, µs since the epoch: its rank in every node's queue
	ch    chan struct{}

	mu     sync.Mutex
	push   bool // accept push wake-ups (false during a split-vote back-off)
	pushes int  // wake-up messages since the last attempt
	// pushWoke: a push ended the current wait; byPush: one ended the wait
	// before the current attempt.
	pushWoke, byPush bool
	timer            *time.Timer
	// queued: a queueing attempt was sent, so some node may hold its
	// entry (whether or not a reply said so).
	queued bool
}

func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// pushed counts a wake-up message from one node. Each node whose release
// deleted the key sends one: the waiter wakes when a majority have (the
// key is free on enough nodes for its attempt to succeed), or pushGrace
// after the first if the others do not come (a node that queued another
// waiter first, or is down).
func (w *waiter) pushed(quorum int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.push {
		return
	}
	w.pushes++
	w.pushWoke = true
	switch {
	case w.pushes >= quorum:
		w.wake()
	case w.pushes == 1:
		w.armLocked(pushGrace)
	}
}

// pushGrace is how long a waiter woken by one node waits for the others.
const pushGrace = 2 * time.Millisecond

// arm sets the waiter's timer to d; push says whether a push wake-up may
// end the wait earlier.
func (w *waiter) arm(d time.Duration, push bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.push = push
	w.armLocked(d)
}

func (w *waiter) armLocked(d time.Duration) {
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.wake)
		return
	}
	w.timer.Reset(d)
}

func (w *waiter) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
}

// newWaiter registers a waiter, or returns nil once Close has begun (Close
// wakes only the waiters registered before it).
func (l *Locker) newWaiter() *waiter {
	l.lc.Lock()
	defer l.lc.Unlock()
	if l.lc.ClosedLocked() {
		return nil
	}
	l.nextID++
	w := &waiter{
		id:    strconv.FormatUint(l.nextID, 16),
		score: strconv.FormatInt(time.Now().UnixMicro(), 10),
		ch:    make(chan struct{}, 1),
		push:  true,
	}
	l.waiters[w.id] = w
	return w
}

func (l *Locker) removeWaiter(w *waiter) {
	l.lc.Lock()
	defer l.lc.Unlock()
	delete(l.waiters, w.id)
}
