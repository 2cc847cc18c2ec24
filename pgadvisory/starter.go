package pgadvisory

import (
	"sync"
	"sync/atomic"
	"time"
)

// A monitor run's states: pending until the starter starts it or a
// requester takes the connection first (cancelled).
const (
	runPending int32 = iota
	runStarted
	runCancelled
)

// monitorRun is one scheduled run of a hold's monitor (see hold.arm).
type monitorRun struct {
	at    time.Time     // when it is due
	start func()        // runs it (on its own goroutine); it closes done
	done  chan struct{} // closed when the run has exited (if it started)
	state atomic.Int32
}

// cancel takes the run back before it starts; false if it already has
// started (the caller must then interrupt it and wait for done).
func (r *monitorRun) cancel() bool {
	return r.state.CompareAndSwap(runPending, runCancelled)
}

// starter starts monitor runs when they are due, from one timer per
// Locker rather than one per acquisition. A runtime timer that becomes the
// process's earliest wakes an idle thread (a futex wake, and that
// thread's spin on another core); one per acquisition would do so on
// most acquisitions, a cost a short critical section notices
// (BenchmarkPGB1Uncontended in bench/ measures an acquisition and its
// release against the raw statements). Here a run is queued, and the
// timer is touched only when the queue was empty or the run is due
// sooner than the timer; when it fires it starts the due runs, drops the
// ones taken back, and re-arms for the earliest left.
//
// It outlives Close, like the leases whose monitors it starts; it holds
// no goroutine while idle (each firing runs briefly on its own).
type starter struct {
	mu    sync.Mutex
	queue []*monitorRun
	timer *time.Timer // created on first use
	at    time.Time   // when timer fires; zero: not armed
}

// add queues r to start at r.at.
func (st *starter) add(r *monitorRun) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.queue = append(st.queue, r)
	if st.at.IsZero() || r.at.Before(st.at) {
		st.armLocked(r.at)
	}
}

// armLocked sets the timer to fire at at. st.mu is held.
func (st *starter) armLocked(at time.Time) {
	st.at = at
	d := time.Until(at)
	if st.timer == nil {
		st.timer = time.AfterFunc(d, st.fire)
		return
	}
	st.timer.Reset(d)
}

// fire starts the due runs and re-arms for the earliest pending one.
func (st *starter) fire() {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := time.Now()
	var next time.Time
	kept := st.queue[:0]
	for _, r := range st.queue {
		switch {
		case r.state.Load() != runPending:
			continue // taken back by a requester
		case r.at.After(now):
			kept = append(kept, r)
			if next.IsZero() || r.at.Before(next) {
				next = r.at
			}
		case r.state.CompareAndSwap(runPending, runStarted):
			go r.start()
		}
	}
	clear(st.queue[len(kept):]) // let the dropped runs' holds go
	st.queue = kept
	st.at = time.Time{}
	if !next.IsZero() {
		st.armLocked(next)
	}
}
