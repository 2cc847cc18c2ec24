package conformance

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/distlock/distlock/migrate"
)

// rollingWorkers and rollingDwell size M7: the workers of the fleet, and
// how long the fleet runs after each worker moves before the next does.
const (
	rollingWorkers = 4
	rollingDwell   = 400 * time.Millisecond
	rollingHold    = 3 * time.Millisecond
)

// rollingSlot is one worker of M7 in its current phase.
type rollingSlot struct {
	p          *process
	ph         migrate.Phase
	stop, done chan struct{}
}

// rollingFleet records what M7's workers saw.
type rollingFleet struct {
	m       *migEnv
	mu      sync.Mutex
	failed  int
	latency map[migrate.Phase][]time.Duration
}

// start starts a worker in phase ph that contends in a loop until stopped.
func (f *rollingFleet) start(ph migrate.Phase, n int) *rollingSlot {
	m := f.m
	s := &rollingSlot{p: m.worker(ph, fmt.Sprintf("roll%d", n)), ph: ph, stop: make(chan struct{}), done: make(chan struct{})}
	m.warm(s.p)
	go func() { // owned: stopped and joined by halt
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(m.ctx, 20*m.ttl)
			g, err := s.p.Acquire(ctx, m.key, acquireReq{TTL: m.ttl, RetryMax: 20 * time.Millisecond})
			cancel()
			f.mu.Lock()
			if err != nil {
				f.failed++
			} else {
				f.latency[ph] = append(f.latency[ph], time.Duration(g.Ret-g.Call))
			}
			f.mu.Unlock()
			if err != nil {
				sleepCtx(m.ctx, 10*time.Millisecond)
				continue
			}
			m.pairSection(s.p, g, rollingHold)
			_ = s.p.Release(m.ctx)
		}
	}()
	return s
}

// halt stops a worker gracefully: its section ends and its lease is
// released, then the process exits.
func (f *rollingFleet) halt(s *rollingSlot) {
	close(s.stop)
	<-s.done
	s.p.close()
}

// m7 is the rolling deploy: rollingWorkers workers contend in a loop
// while the driver moves them one at a time through the phases, stopping
// each gracefully and restarting it with the next phase's URL. Before
// each step after the first, it waits one TTL after the last client of
// the step before was stopped (the runbook's wait), so that at most two
// adjacent phases hold leases at once. Every write goes through the pair
// register.
func m7(m *migEnv) observation {
	f := &rollingFleet{m: m, latency: map[migrate.Phase][]time.Duration{}}
	phases := []migrate.Phase{migrate.PhaseFrom, migrate.PhaseShadow, migrate.PhaseBoth, migrate.PhaseTo}
	slots := make([]*rollingSlot, rollingWorkers)
	for i := range slots {
		slots[i] = f.start(phases[0], i)
	}
	sleepCtx(m.ctx, rollingDwell)
	for k, ph := range phases[1:] {
		if k > 0 {
			sleepCtx(m.ctx, m.ttl) // no client of phase k-1 can still hold a lease
		}
		for i := range slots {
			f.halt(slots[i])
			slots[i] = f.start(ph, i)
			sleepCtx(m.ctx, rollingDwell)
		}
	}
	for _, s := range slots {
		f.halt(s)
	}
	f.mu.Lock()
	failed, lat := f.failed, f.latency
	f.mu.Unlock()
	return m.judgeAdjacent(failed, lat)
}
