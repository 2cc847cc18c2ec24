package conformance

import (
	"fmt"
	"time"

	"github.com/distlock/distlock"
)

// Scenario S19: the old leader is cut off from its peers together with a
// client that reaches only it; the others elect a new leader; then heal.

func expectS19(g distlock.Guarantees, h *Harness) expectation {
	if h.Leader == nil || h.Isolate == nil || h.Rejoin == nil || h.ServerLinks == nil || len(h.Servers) < 3 {
		return notApplicable("needs a leader, server isolation and per-server client links")
	}
	if !g.FailoverSafe {
		return breaks("failover is not safe")
	}
	if !g.LostNotification {
		return breaks("no lost-lease notification")
	}
	return holds()
}

// s19: client A reaches only the leader, client B only the other servers.
// A acquires (with automatic extension) and reads the resources; the
// leader is isolated from its peers, which elect a new leader; B acquires
// through them and updates the resources; the partition heals; A writes
// back what it read unless it was told its lease was lost. A lost update
// or an overlap in the history is a violation.
func s19(e *env) observation {
	ld, err := e.h.Leader(e.ctx)
	if err != nil {
		e.t.Fatalf("leader: %v", err)
	}
	aLinks, bLinks := e.h.ServerLinks("s19-a"), e.h.ServerLinks("s19-b")
	// Cut before the clients connect, so they never count on the cut links.
	for i := range aLinks {
		if i != ld {
			e.blackhole(aLinks[i])
		}
	}
	e.blackhole(bLinks[ld])
	a, b := e.local("s19-a"), e.local("s19-b")
	ga, err := a.Acquire(withTimeout(e, 10*e.ttl), e.key, acquireReq{TTL: e.ttl, AutoExtend: time.Hour})
	if err != nil {
		e.t.Fatalf("acquire through the leader alone: %v", err)
	}
	pv, fv := e.plain.read(), e.fenced.read()
	name := e.h.Servers[ld].Name()
	if err := e.h.Isolate(e.ctx, ld); err != nil {
		e.t.Fatalf("isolate %s: %v", name, err)
	}
	isolated := time.Now()
	rejoined := false
	rejoin := func() {
		if !rejoined {
			rejoined = true
			if err := e.h.Rejoin(e.ctx, ld); err != nil {
				e.t.Fatalf("rejoin %s: %v", name, err)
			}
		}
	}
	defer rejoin()
	gb, berr := b.Acquire(withTimeout(e, 15*e.ttl), e.key, acquireReq{TTL: e.ttl, RetryMax: 50 * time.Millisecond})
	took := time.Since(isolated)
	if berr == nil {
		e.section(b, gb, time.Millisecond)
		_ = b.Release(e.ctx)
	}
	rejoin()
	if lost, _ := a.Lost(); !lost { // A never learned: it acts on what it read
		e.plain.write(a.ID(), ga.Fence, pv)
		e.fenced.write(a.ID(), ga.Fence, fv)
	}
	lost, lostAt := a.Lost()
	_ = a.Release(e.ctx)
	if _, err := e.h.Leader(withTimeout(e, 30*time.Second)); err != nil {
		e.t.Fatalf("no leader after the heal: %v", err)
	}
	m := map[string]float64{"takeover_s": took.Seconds()}
	me, detail := e.checkME()
	fence, fenceDetail := e.checkFence()
	detail += "; " + fenceDetail
	switch {
	case !me || !fence:
		return observation{detail: detail, metrics: m}
	case berr != nil: // the majority side must make progress (DF, FT)
		return observation{detail: fmt.Sprintf("DF: B never acquired through the new majority: %v; %s", oneLine(berr.Error()), detail), metrics: m}
	case !lost:
		return observation{detail: "A was never told its lease was lost, yet B acquired; " + detail, metrics: m}
	}
	m["ln_margin_ms"] = millis(time.Duration(gb.Ret - lostAt))
	if late := lateNotice(e, a, gb); late != "" {
		return observation{detail: late, metrics: m}
	}
	return observation{held: true, detail: fmt.Sprintf("%s isolated with A; B acquired %v later, %v after A was told; %s",
		name, took.Round(time.Millisecond), time.Duration(gb.Ret-lostAt).Round(time.Millisecond), detail), metrics: m}
}
