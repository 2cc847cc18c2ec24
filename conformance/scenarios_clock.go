package conformance

import (
	"fmt"
	"time"

	"github.com/distlock/distlock"
)

// Scenarios S20 and S21: one server's wall clock moves (libfaketime in
// the server's container, Harness.ClockJump) while a lease is held. The
// server whose clock moves is the leader (Harness.Leader), else the first
// of Majority, else server 0.

// clockServer is the index of the server whose clock the scenarios move.
func clockServer(e *env) int {
	if e.h.Leader != nil {
		if i, err := e.h.Leader(e.ctx); err == nil {
			return i
		}
	}
	if len(e.h.Majority) > 0 {
		return e.h.Majority[0]
	}
	return 0
}

func expectS20(g distlock.Guarantees, h *Harness) expectation {
	if h.ClockJump == nil || len(h.Servers) == 0 {
		return notApplicable("needs a server clock hook (libfaketime)")
	}
	if !g.ServerClockSafety {
		return breaks("exclusion rests on TTLs or session timeouts, which a server may measure on its wall clock")
	}
	return holds()
}

// s20: A holds under automatic extension; then one server's wall clock
// jumps forward 2 TTLs. A server that times leases on its wall clock
// expires A's at once and lets B in while A still believes it holds; B
// tries for 3 TTLs.
func s20(e *env) observation {
	a, b := e.local("a"), e.local("b")
	if _, err := a.Acquire(e.ctx, e.key, acquireReq{TTL: e.ttl, AutoExtend: time.Hour}); err != nil {
		e.t.Fatalf("acquire: %v", err)
	}
	i := clockServer(e)
	if err := e.h.ClockJump(e.ctx, i, 2*e.ttl); err != nil {
		e.t.Fatalf("clock jump on %s: %v", e.h.Servers[i].Name(), err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := e.h.ClockJump(e.ctx, i, 0); err != nil {
				e.t.Fatalf("restoring the clock of %s: %v", e.h.Servers[i].Name(), err)
			}
		}
	}
	defer restore()
	lost := func() string {
		if l, _ := a.Lost(); l {
			return "A was told its lease was lost"
		}
		return "A kept its lease"
	}
	name := e.h.Servers[i].Name()
	me, detail := e.takeOver(a, b, 3*e.ttl, restore)
	return observation{held: me, detail: fmt.Sprintf("%s's wall clock +%v: %s; %s", name, 2*e.ttl, lost(), detail)}
}

func expectS21(g distlock.Guarantees, h *Harness) expectation {
	if h.ClockJump == nil || len(h.Servers) == 0 {
		return notApplicable("needs a server clock hook (libfaketime)")
	}
	if exp := needsLinks(g, h); exp.kind != "holds" {
		return exp
	}
	if !g.ServerClockSafety {
		return breaks("expiry rests on TTLs or session timeouts, which a server may measure on its wall clock: set back, it keeps a dead holder's lock")
	}
	return holds()
}

// s21: A holds under automatic extension; one server's wall clock is set
// back 2 TTLs and A is cut off from every server. B must acquire within
// the bound of S07 (TTL + TTL/2 + 500 ms after the cut).
func s21(e *env) observation {
	a, b := e.local("a"), e.local("b")
	if _, err := a.Acquire(e.ctx, e.key, acquireReq{TTL: e.ttl, AutoExtend: time.Hour}); err != nil {
		e.t.Fatalf("acquire: %v", err)
	}
	i := clockServer(e)
	name := e.h.Servers[i].Name()
	if err := e.h.ClockJump(e.ctx, i, -2*e.ttl); err != nil {
		e.t.Fatalf("clock jump on %s: %v", name, err)
	}
	link := e.h.Links("a")
	cut := time.Now()
	e.blackhole(link)
	bound := e.ttl + e.ttl/2 + 500*time.Millisecond
	g, err := b.Acquire(withTimeout(e, 3*bound), e.key, acquireReq{TTL: e.ttl, RetryMax: 20 * time.Millisecond})
	took := time.Since(cut)
	e.heal(link)
	if err == nil {
		e.section(b, g, time.Millisecond)
		_ = b.Release(e.ctx)
	}
	if jerr := e.h.ClockJump(e.ctx, i, 0); jerr != nil {
		e.t.Fatalf("restoring the clock of %s: %v", name, jerr)
	}
	_ = a.Release(e.ctx)
	m := map[string]float64{"reacquire_s": took.Seconds(), "bound_s": bound.Seconds()}
	me, detail := e.checkME()
	switch {
	case err != nil:
		return observation{detail: fmt.Sprintf("DF: with %s's clock set back %v, nobody acquired after the holder was cut off: %v", name, 2*e.ttl, err), metrics: m}
	case took > bound:
		return observation{detail: fmt.Sprintf("DF: with %s's clock set back %v, re-acquired only %v after the cut (bound %v)", name, 2*e.ttl, took.Round(time.Millisecond), bound), metrics: m}
	case !me: // S21 documents a liveness cost at most, never an overlap
		return observation{unrelated: true, detail: detail, metrics: m}
	}
	return observation{held: true, detail: fmt.Sprintf("%s's wall clock -%v: re-acquired %v after the holder was cut off (bound %v); %s",
		name, 2*e.ttl, took.Round(time.Millisecond), bound, detail), metrics: m}
}
