package conformance

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/distlock/distlock"
)

// kill, start, pause and unpause apply a fault (or its repair) to the
// servers idx and record it, so that a scenario that stops early (a
// Fatalf) still leaves every server running for the next one: see
// restoreServers, registered by newEnv.
func (e *env) kill(idx []int)    { e.fault(idx, "kill", Server.Kill, killed) }
func (e *env) start(idx []int)   { e.fault(idx, "start", Server.Start, running) }
func (e *env) pause(idx []int)   { e.fault(idx, "pause", Server.Pause, paused) }
func (e *env) unpause(idx []int) { e.fault(idx, "unpause", Server.Unpause, running) }

// serverState is what a fault left a server as.
type serverState int

const (
	running serverState = iota
	killed
	paused
)

// fault runs op on each server and records the state it leaves it in.
func (e *env) fault(idx []int, what string, op func(Server, context.Context) error, state serverState) {
	e.t.Helper()
	for _, i := range idx {
		s := e.h.Servers[i]
		if err := op(s, e.ctx); err != nil {
			e.t.Fatalf("%s %s: %v", what, s.Name(), err)
		}
		e.mu.Lock()
		if state == running {
			delete(e.down, i)
		} else {
			e.down[i] = state
		}
		e.mu.Unlock()
	}
}

// restoreServers unpauses and restarts whatever the scenario left down.
func (e *env) restoreServers() {
	e.mu.Lock()
	down := e.down
	e.down = map[int]serverState{}
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i, state := range down {
		s := e.h.Servers[i]
		var err error
		if state == paused {
			err = s.Unpause(ctx)
		} else {
			err = s.Start(ctx)
		}
		if err != nil {
			e.t.Errorf("restoring %s after the scenario: %v", s.Name(), err)
		}
	}
}

func all(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// s13: a tolerated minority of servers is killed: acquire and release keep
// working within a bound.
func s13(e *env) observation {
	e.kill(e.h.Minority)
	defer e.start(e.h.Minority)
	a := e.local("a")
	var worst time.Duration
	for i := 0; i < 5; i++ {
		start := time.Now()
		g, err := a.Acquire(withTimeout(e, 2*e.ttl), e.key, acquireReq{TTL: e.ttl, RetryMax: 20 * time.Millisecond})
		if err != nil {
			return brokeObs("acquire %d with a minority down: %v", i, err)
		}
		e.section(a, g, time.Millisecond)
		if err := a.Release(e.ctx); err != nil {
			return brokeObs("release %d with a minority down: %v", i, err)
		}
		worst = max(worst, time.Since(start))
	}
	return observation{held: true, detail: fmt.Sprintf("5 acquire+release cycles with %d server(s) down, worst %v", len(e.h.Minority), worst.Round(time.Millisecond)),
		metrics: map[string]float64{"worst_cycle_ms": millis(worst)}}
}

// s14: a majority (or the primary) is killed: no grant without quorum, a
// prompt error, and recovery after the servers come back.
func s14(e *env) observation {
	a := e.local("a")
	e.kill(e.h.Majority)
	start := time.Now()
	_, err := a.Acquire(withTimeout(e, 2*e.ttl), e.key, acquireReq{Try: true, TTL: e.ttl})
	took := time.Since(start)
	e.start(e.h.Majority)
	if err == nil {
		_ = a.Release(e.ctx)
		return brokeObs("granted with a majority of servers down")
	}
	g, rerr := a.Acquire(withTimeout(e, 10*e.ttl), e.key, acquireReq{TTL: e.ttl, RetryMax: 50 * time.Millisecond})
	if rerr != nil {
		return brokeObs("no recovery after the servers came back: %v", rerr)
	}
	e.section(a, g, time.Millisecond)
	_ = a.Release(e.ctx)
	return observation{held: true, detail: fmt.Sprintf("refused in %v (%v); recovered after restart", took.Round(time.Millisecond), oneLine(err.Error())),
		metrics: map[string]float64{"refusal_ms": millis(took)}}
}

// s15: the primary/leader is frozen for 2 TTLs while held: no overlap
// (the holder learns first) and service resumes.
func s15(e *env) observation {
	a, b := e.local("a"), e.local("b")
	if _, err := a.Acquire(e.ctx, e.key, acquireReq{TTL: e.ttl, AutoExtend: time.Hour}); err != nil {
		e.t.Fatalf("acquire: %v", err)
	}
	e.pause(e.h.Majority)
	var wg sync.WaitGroup
	var berr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		g, err := b.Acquire(withTimeout(e, 6*e.ttl), e.key, acquireReq{TTL: e.ttl, RetryMax: 50 * time.Millisecond})
		berr = err
		if err == nil {
			e.section(b, g, time.Millisecond)
			_ = b.Release(e.ctx)
		}
	}()
	sleepCtx(e.ctx, 2*e.ttl)
	e.unpause(e.h.Majority)
	wg.Wait()
	_ = a.Release(e.ctx)
	me, detail := e.checkME()
	if berr != nil {
		return brokeObs("service did not resume after the freeze: %v; %s", berr, detail)
	}
	return observation{held: me, detail: detail}
}

// s16 (and s23 with every server): servers restarted without durable state
// while A holds a long lease; B tries to acquire.
func restartWhileHeld(e *env, idx []int) observation {
	a, b := e.local("a"), e.local("b")
	if _, err := a.Acquire(e.ctx, e.key, acquireReq{TTL: 10 * e.ttl}); err != nil {
		e.t.Fatalf("acquire: %v", err)
	}
	e.kill(idx)
	e.start(idx)
	me, detail := e.takeOver(a, b, 3*e.ttl, nil)
	return observation{held: me, detail: detail}
}

// takeOver has B try to acquire for up to wait while A believes it holds
// the key, runs B's section if it got in, calls healed (if not nil), ends
// A's section, and judges ME; a refusal of B is noted in the detail.
func (e *env) takeOver(a, b contender, wait time.Duration, healed func()) (bool, string) {
	g, err := b.Acquire(withTimeout(e, wait), e.key, acquireReq{TTL: e.ttl, RetryMax: 50 * time.Millisecond})
	if healed != nil {
		healed()
	}
	if err == nil {
		e.section(b, g, time.Millisecond)
		_ = b.Release(e.ctx)
	}
	_ = a.Release(e.ctx)
	me, detail := e.checkME()
	if me && err != nil {
		detail += fmt.Sprintf("; B was refused: %v", oneLine(err.Error()))
	}
	return me, detail
}

// s16 restarts one server of the holder's majority. With per-server links
// the holder is given exactly a bare majority (the servers in Majority) and
// B the restarted server plus every server outside it (S17's Redlock
// construction); otherwise both see every server.
func s16(e *env) observation {
	if e.h.ServerLinks == nil {
		return restartWhileHeld(e, e.h.Majority[:1])
	}
	return bareMajorityRestart(e)
}

func bareMajorityRestart(e *env) observation {
	a, b := e.local("a"), e.local("b")
	inA := map[int]bool{}
	for _, i := range e.h.Majority {
		inA[i] = true
	}
	aLinks, bLinks := e.h.ServerLinks("a"), e.h.ServerLinks("b")
	for i, l := range aLinks {
		if !inA[i] {
			e.blackhole(l)
		}
	}
	_, err := a.Acquire(e.ctx, e.key, acquireReq{Try: true, TTL: 10 * e.ttl})
	for _, l := range aLinks {
		e.heal(l)
	}
	if err != nil {
		e.t.Fatalf("acquire on a bare majority: %v", err)
	}
	restarted := e.h.Majority[0]
	e.kill([]int{restarted})
	e.start([]int{restarted})
	for _, i := range e.h.Majority[1:] {
		e.blackhole(bLinks[i])
	}
	me, detail := e.takeOver(a, b, 2*e.ttl, func() {
		for _, l := range bLinks {
			e.heal(l)
		}
	})
	return observation{held: me, detail: fmt.Sprintf("A held servers %v; %s restarted; %s", e.h.Majority, e.h.Servers[restarted].Name(), detail)}
}
func s23(e *env) observation { return restartWhileHeld(e, all(len(e.h.Servers))) }

// s18: the lock is written to the primary, which fails over to a replica
// that has not received it; B acquires from the new primary.
func s18(e *env) observation {
	a, b := e.local("a"), e.local("b")
	if err := e.h.PrepareFailover(e.ctx); err != nil {
		e.t.Fatalf("prepare failover: %v", err)
	}
	if _, err := a.Acquire(e.ctx, e.key, acquireReq{TTL: 10 * e.ttl}); err != nil {
		e.t.Fatalf("acquire: %v", err)
	}
	if err := e.h.Failover(e.ctx); err != nil {
		e.t.Fatalf("failover: %v", err)
	}
	if e.h.RestoreFailover != nil {
		defer func() {
			if err := e.h.RestoreFailover(e.ctx); err != nil {
				e.t.Fatalf("restore after failover: %v", err)
			}
		}()
	}
	me, meDetail := e.takeOver(a, b, 3*e.ttl, nil)
	fence, fenceDetail := e.checkFence()
	return observation{held: me && fence, detail: meDetail + "; " + fenceDetail}
}

func needsServers(idx func(h *Harness) []int, promise func(g distlock.Guarantees) expectation) func(distlock.Guarantees, *Harness) expectation {
	return func(g distlock.Guarantees, h *Harness) expectation {
		if len(h.Servers) == 0 || len(idx(h)) == 0 {
			return notApplicable("needs server fault hooks")
		}
		return promise(g)
	}
}

func minority(h *Harness) []int    { return h.Minority }
func majority(h *Harness) []int    { return h.Majority }
func everyServer(h *Harness) []int { return all(len(h.Servers)) }

// s31: fences across a restart of the servers that minted them: the next
// holder's fence must exceed the previous holder's.
func s31(e *env) observation {
	a, b := e.local("a"), e.local("b")
	ga, err := a.Acquire(e.ctx, e.key, acquireReq{TTL: e.ttl})
	if err != nil {
		e.t.Fatalf("acquire: %v", err)
	}
	_ = a.Release(e.ctx)
	idx := all(len(e.h.Servers))
	e.kill(idx)
	e.start(idx)
	gb, err := b.Acquire(withTimeout(e, 5*e.ttl), e.key, acquireReq{TTL: e.ttl, RetryMax: 50 * time.Millisecond})
	if err != nil {
		return unrelatedObs("DF: no acquisition after the restart: %v", err)
	}
	_ = b.Release(e.ctx)
	if gb.Fence <= ga.Fence {
		return brokeObs("fence went from %d before the restart to %d after", ga.Fence, gb.Fence)
	}
	return heldObs("fence %d before the restart, %d after", ga.Fence, gb.Fence)
}
