package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/distlock/distlock"
)

// Scenarios S19 and S36: one server is cut off from the other servers
// together with a client that reaches only it, while another client
// acquires through the rest; then the partition heals. S19 cuts off the
// leader (the others elect a new one), S36 a follower (the leader and the
// other member keep the quorum).

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

// s19: the leader is cut off from its peers with client A.
func s19(e *env) observation {
	ld, err := e.h.Leader(e.ctx)
	if err != nil {
		e.t.Fatalf("leader: %v", err)
	}
	return partitionedWithClient(e, ld, "s19")
}

func expectS36(g distlock.Guarantees, h *Harness) expectation {
	if h.Leader == nil || h.Isolate == nil || h.Rejoin == nil || h.ServerLinks == nil || len(h.Servers) < 3 {
		return notApplicable("needs a leader, server isolation and per-server client links")
	}
	if !g.LostNotification {
		return breaks("no lost-lease notification")
	}
	return holds()
}

// s36: a follower is cut off from the leader and the other members with
// client A, which reaches only that follower. Whatever the follower still
// answers on its own (reads, session pings) must not let A keep claiming
// its lease once the majority has expired it and granted the key to B.
func s36(e *env) observation {
	ld, err := e.h.Leader(e.ctx)
	if err != nil {
		e.t.Fatalf("leader: %v", err)
	}
	return partitionedWithClient(e, (ld+1)%len(e.h.Servers), "s36")
}

// partitionedWithClient: client A reaches only server i, client B only
// the other servers. A acquires (with automatic extension) and reads the
// resources; server i is cut off from the other servers (its link to A
// stays up); B acquires through the others and updates the resources;
// the partition heals; A writes back what it read unless it was told its
// lease was lost. A lost update or an overlap in the history is a
// violation, and so is a notification later than B's grant.
func partitionedWithClient(e *env, i int, prefix string) observation {
	aLinks, bLinks := e.h.ServerLinks(prefix+"-a"), e.h.ServerLinks(prefix+"-b")
	// Cut before the clients connect, so they never count on the cut links.
	for j := range aLinks {
		if j != i {
			e.blackhole(aLinks[j])
		}
	}
	e.blackhole(bLinks[i])
	a, b := e.local(prefix+"-a"), e.local(prefix+"-b")
	ga, err := a.Acquire(withTimeout(e, 10*e.ttl), e.key, acquireReq{TTL: e.ttl, AutoExtend: time.Hour})
	if err != nil {
		e.t.Fatalf("acquire through %s alone: %v", e.h.Servers[i].Name(), err)
	}
	pv, fv := e.plain.read(), e.fenced.read()
	name := e.h.Servers[i].Name()
	rejoined := false
	// Whatever happens, even an isolation that failed part-way, the
	// server rejoins before the next scenario, on a context of its own.
	e.t.Cleanup(func() {
		if !rejoined {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := e.h.Rejoin(ctx, i); err != nil {
				e.t.Errorf("rejoin %s after the scenario: %v", name, err)
			}
		}
	})
	if err := e.h.Isolate(e.ctx, i); err != nil {
		e.t.Fatalf("isolate %s: %v", name, err)
	}
	name = e.h.Servers[i].Name() // a role may name its member while the fault is on
	isolated := time.Now()
	rejoin := func() {
		if !rejoined {
			if err := e.h.Rejoin(e.ctx, i); err != nil {
				e.t.Fatalf("rejoin %s: %v", name, err)
			}
			rejoined = true
		}
	}
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
		return observation{detail: fmt.Sprintf("DF: B never acquired through the majority: %v; %s", oneLine(berr.Error()), detail), metrics: m}
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
