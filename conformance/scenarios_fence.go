package conformance

// Scenario S35: a holder stops right after Acquire returns, before its
// next step; the next holder acquires once the first lease has ended and
// must get a higher fence.

import (
	"fmt"
	"strings"
	"time"

	"github.com/distlock/distlock"
)

func expectS35(g distlock.Guarantees, _ *Harness) expectation {
	if g.Fence == distlock.FenceNone {
		return breaks("no ordered fences")
	}
	return holds()
}

// s35 runs two variants, each on its own key:
//
//	stopped: A acquires and stops: its worker process is SIGSTOPped as
//	   soon as Acquire returns (or, without worker processes, an
//	   in-process holder with no automatic extension makes no further
//	   call); B acquires after A's lease ends.
//	cut: A acquires over links slowed by a few milliseconds, so that what
//	   it sends last (a fence write-back pipelined behind the acquisition)
//	   is still in flight when Acquire returns; A's links are then cut,
//	   dropping it. B acquires after A's lease ends, through every server
//	   but server 0 where the backend tolerates a failure. Where fences
//	   come from per-server counters (FenceMonotonic with tolerated
//	   failures), server 0's counter is first pushed ahead of the others,
//	   so that A's fence comes from server 0 alone and B's from counters
//	   that only A's write-back could have raised; a round in which A's
//	   fence did not come from server 0 is repeated with a longer push,
//	   and the variant is inconclusive if none did.
//
// In both, B's fence must exceed A's; the fence oracle also checks the
// whole history.
func s35(e *env) observation {
	var held, notes []string
	for _, v := range []func(*env) (string, observation){stoppedHolder, cutHolder} {
		name, obs := v(e)
		switch {
		case obs.unrelated || (!obs.held && !obs.inconclusive):
			obs.detail = name + ": " + obs.detail
			return obs
		case obs.inconclusive:
			notes = append(notes, name+": "+obs.detail)
		case obs.detail != "":
			held = append(held, name+": "+obs.detail)
		}
	}
	if len(notes) > 0 {
		return observation{inconclusive: true, detail: strings.Join(append(notes, held...), "; ")}
	}
	return heldObs("%s", strings.Join(held, "; "))
}

// nextFence judges B's fence against A's.
func nextFence(ga, gb grant) observation {
	if gb.Fence <= ga.Fence {
		return brokeObs("fence went back: A got %d, B acquired after A's lease ended and got %d", ga.Fence, gb.Fence)
	}
	return heldObs("A's fence %d, B's %d", ga.Fence, gb.Fence)
}

// stoppedHolder is the "stopped" variant.
func stoppedHolder(e *env) (string, observation) {
	key := e.key + "-stopped"
	b := e.local("s35-b")
	if _, ok := needsProcesses(e.g, e.h); ok {
		a := e.process("s35-a")
		ga, err := a.Acquire(e.ctx, key, acquireReq{TTL: e.ttl, AutoExtend: time.Hour})
		if err != nil {
			e.t.Fatalf("acquire: %v", err)
		}
		if err := a.Pause(); err != nil {
			e.t.Fatal(err)
		}
		return "stopped (SIGSTOP)", afterStop(e, key, a, b, ga, func() { _ = a.Resume() })
	}
	a := e.local("s35-a")
	ga, err := a.Acquire(e.ctx, key, acquireReq{TTL: e.ttl})
	if err != nil {
		e.t.Fatalf("acquire: %v", err)
	}
	return "stopped (no further call)", afterStop(e, key, a, b, ga, func() {})
}

// afterStop lets B acquire key once A's lease has ended, then resumes and
// releases A, and judges the fences.
func afterStop(e *env, key string, a, b contender, ga grant, resume func()) observation {
	gb, err := b.Acquire(withTimeout(e, 5*e.ttl), key, acquireReq{TTL: e.ttl, RetryMax: 20 * time.Millisecond})
	if err == nil {
		_ = b.Release(e.ctx)
	}
	resume()
	_ = a.Release(e.ctx)
	if err != nil {
		return unrelatedObs("DF: B never acquired after A stopped: %v", err)
	}
	return nextFence(ga, gb)
}

// cutHolder is the "cut" variant; it needs per-client links.
func cutHolder(e *env) (string, observation) {
	const name = "cut with its last request in flight"
	if e.h.Links == nil {
		return name, observation{held: true}
	}
	perServer := e.h.ServerLinks != nil && len(e.h.Servers) >= 3 && e.g.ToleratedFailures > 0
	if perServer { // B never reaches server 0: cut before it connects
		bl := e.h.ServerLinks("s35-b")
		e.blackhole(bl[0])
		defer e.heal(bl[0])
	}
	// A is a latency client: its requests in flight are dropped in its
	// proxies at once (a packet-level cut takes effect only after an
	// exec in each server's container), and each server also drops A's
	// packets, so it sees a dead peer.
	aLink := e.h.Links(LatencyClient("s35-a"))
	defer e.heal(aLink)
	a, b := e.local(LatencyClient("s35-a")), e.local("s35-b")
	if _, err := a.Acquire(e.ctx, e.key+"-warm", acquireReq{Try: true, TTL: e.ttl}); err == nil {
		_ = a.Release(e.ctx) // connection set-up is not the scenario
	}
	if !perServer || e.g.Fence != distlock.FenceMonotonic {
		return name, cutOnce(e, e.key+"-cut", a, b, aLink)
	}
	// Fences from per-server counters: push server 0's ahead, then take
	// B's side's highest counter (pb); A's fence above pb+1 (B's side
	// adds one for A's acquisition) can only come from server 0. Until
	// it does, retry with a longer push.
	s := e.local("s35-s")
	push := 250 * time.Millisecond
	var ga grant
	for round := range 4 {
		if err := pushServer0(e, b, s, fmt.Sprintf("%s-push-%d", e.key, round), push); err != nil {
			return name, observation{inconclusive: true, detail: err.Error()}
		}
		gb, err := b.Acquire(withTimeout(e, 5*e.ttl), fmt.Sprintf("%s-side-%d", e.key, round), acquireReq{Try: true, TTL: e.ttl})
		if err != nil {
			return name, observation{inconclusive: true, detail: fmt.Sprintf("taking a fence without server 0: %v", err)}
		}
		_ = b.Release(e.ctx)
		var obs observation
		ga, obs = cutRound(e, fmt.Sprintf("%s-cut-%d", e.key, round), a, b, aLink)
		if !obs.held || ga.Fence > gb.Fence+1 {
			obs.detail = joinDetail(fmt.Sprintf("A's fence from server 0 (the others' highest counter was %d)", gb.Fence), obs.detail)
			return name, obs
		}
		push *= 4
	}
	return name, observation{inconclusive: true, detail: fmt.Sprintf("server 0's counter could not be pushed ahead: A's fence %d did not come from it", ga.Fence)}
}

// cutOnce is one round of the cut variant, judged.
func cutOnce(e *env, key string, a, b contender, aLink Link) observation {
	_, obs := cutRound(e, key, a, b, aLink)
	return obs
}

// cutRound: A acquires key over links slowed by a few milliseconds and is
// cut off as soon as Acquire returns; B acquires key after A's lease
// ended; A is healed and releases. It returns A's grant and the judgement.
func cutRound(e *env, key string, a, b contender, aLink Link) (grant, observation) {
	e.latency(aLink, min(10*time.Millisecond, e.ttl/50))
	ga, err := a.Acquire(withTimeout(e, 5*e.ttl), key, acquireReq{Try: true, TTL: e.ttl})
	e.blackhole(aLink)
	if err != nil {
		e.heal(aLink)
		return ga, observation{inconclusive: true, detail: fmt.Sprintf("A could not acquire over the slowed links: %v", err)}
	}
	gb, berr := b.Acquire(withTimeout(e, 5*e.ttl), key, acquireReq{TTL: e.ttl, RetryMax: 20 * time.Millisecond})
	if berr == nil {
		_ = b.Release(e.ctx)
	}
	e.heal(aLink)
	_ = a.Release(e.ctx)
	if berr != nil {
		return ga, unrelatedObs("DF: B never acquired after A was cut off: %v", berr)
	}
	return ga, nextFence(ga, gb)
}

// pushServer0 raises server 0's fence counter, and no other: b, which
// reaches every server but 0, holds key while s, which reaches all of
// them, blocks on it for d with a short retry delay. Each of s's attempts
// takes the key on server 0 alone (raising its counter there) and is
// undone before the next.
func pushServer0(e *env, b, s contender, key string, d time.Duration) error {
	if _, err := b.Acquire(withTimeout(e, 5*e.ttl), key, acquireReq{Try: true, TTL: 10 * e.ttl}); err != nil {
		return fmt.Errorf("holding a key on every server but 0: %w", err)
	}
	if _, err := s.Acquire(withTimeout(e, d), key, acquireReq{TTL: e.ttl, RetryMax: 2 * time.Millisecond}); err == nil {
		_ = s.Release(e.ctx)
	}
	_ = b.Release(e.ctx)
	return nil
}
