package conformance

import (
	"errors"
	"fmt"
	"time"

	"github.com/distlock/distlock"
)

func needsProcesses(g distlock.Guarantees, h *Harness) (expectation, bool) {
	if h.URL == nil || !g.CrossProcess {
		return notApplicable("needs clients in separate processes"), false
	}
	return expectation{}, true
}

// s07: the holder's process is SIGKILLed; another client must get the key
// within TTL plus slack (at once where the backend frees it on crash).
func s07(e *env) observation {
	a, b := e.process("a"), e.local("b")
	if _, err := a.Acquire(e.ctx, e.key, acquireReq{TTL: e.ttl, AutoExtend: time.Hour}); err != nil {
		e.t.Fatalf("acquire: %v", err)
	}
	killed := time.Now()
	a.Kill()
	bound := e.ttl + e.ttl/2 + 500*time.Millisecond
	if e.g.ReleasedOnCrash {
		bound = 2 * time.Second
	}
	g, err := b.Acquire(withTimeout(e, 3*bound), e.key, acquireReq{TTL: e.ttl, RetryMax: 20 * time.Millisecond})
	took := time.Since(killed)
	m := map[string]float64{"reacquire_s": took.Seconds(), "bound_s": bound.Seconds()}
	if err != nil {
		return observation{detail: fmt.Sprintf("no client acquired after the holder died: %v", err), metrics: m}
	}
	e.section(b, g, time.Millisecond)
	_ = b.Release(e.ctx)
	if took > bound {
		return observation{detail: fmt.Sprintf("re-acquired after %v, bound %v", took, bound), metrics: m}
	}
	return observation{held: true, detail: fmt.Sprintf("re-acquired %v after SIGKILL (bound %v)", took.Round(time.Millisecond), bound), metrics: m}
}

// pausedHolder is S08/S09: process A acquires, reads the resources, checks
// it still holds the lease, and is frozen (SIGSTOP) for 3 TTLs mid-section;
// B acquires meanwhile and updates; A resumes and writes what it read,
// as a real client past its check would. It reports whether B acquired
// (without a takeover there is no stale write to judge).
func pausedHolder(e *env) (tookOver bool) {
	a, b := e.process("a"), e.local("b")
	g, err := a.Acquire(e.ctx, e.key, acquireReq{TTL: e.ttl, AutoExtend: time.Hour})
	if err != nil {
		e.t.Fatalf("acquire: %v", err)
	}
	pv, fv := e.plain.read(), e.fenced.read()
	if lost, _ := a.Lost(); lost {
		e.t.Fatalf("lease lost before the pause")
	}
	if err := a.Pause(); err != nil {
		e.t.Fatal(err)
	}
	if gb, err := b.Acquire(withTimeout(e, 3*e.ttl), e.key, acquireReq{TTL: e.ttl, RetryMax: 20 * time.Millisecond}); err == nil {
		tookOver = true
		e.section(b, gb, time.Millisecond)
		_ = b.Release(e.ctx)
	}
	sleepCtx(e.ctx, time.Until(time.Unix(0, g.Ret).Add(3*e.ttl)))
	if err := a.Resume(); err != nil {
		e.t.Fatal(err)
	}
	e.plain.write(a.ID(), g.Fence, pv)
	e.fenced.write(a.ID(), g.Fence, fv)
	_ = a.Release(e.ctx)
	return tookOver
}

func s08(e *env) observation {
	pausedHolder(e)
	me, detail := e.checkME()
	return observation{held: me, detail: detail}
}

func s09(e *env) observation {
	tookOver := pausedHolder(e)
	ok, detail := e.checkFSAFE()
	if ok && !tookOver { // nothing stale was written: the fence was not tested
		return observation{inconclusive: true, detail: "B never acquired while A was paused; " + detail}
	}
	return observation{held: ok, detail: detail}
}

func needsLinks(g distlock.Guarantees, h *Harness) expectation {
	if h.Links == nil {
		return notApplicable("needs per-client network links")
	}
	return holds()
}

// s10: the client stalls between sending the acquire and reading the
// replies (link latency of TTL/3 each way, on a warmed connection, through
// a latency client's proxies): the validity it gets must not count the
// time in flight, and a lease must never be returned already expired.
func s10(e *env) observation {
	a := e.local(LatencyClient("a"))
	// Warm up: connection set-up round trips are not the scenario.
	if _, err := a.Acquire(e.ctx, e.key+"/warm", acquireReq{Try: true, TTL: e.ttl}); err == nil {
		_ = a.Release(e.ctx)
	}
	link := e.h.Links(LatencyClient("a"))
	defer e.heal(link)
	// TTL/3 each way first; backends with a per-server timeout below that
	// (Redlock) refuse, so step down to TTL/100.
	var g grant
	var err error
	var lat time.Duration
	// Each step on its own key: a refused step's clean-up (unlocks
	// pipelined behind its requests) may still be crossing the slow link.
	for step, l := range []time.Duration{e.ttl / 3, e.ttl / 100} {
		lat = l
		e.latency(link, lat)
		if g, err = a.Acquire(withTimeout(e, 5*e.ttl), fmt.Sprintf("%s/%d", e.key, step), acquireReq{Try: true, TTL: e.ttl}); err == nil {
			break
		}
	}
	if err != nil { // no lease to judge: the scenario did not exercise AV
		return observation{inconclusive: true, detail: fmt.Sprintf("acquire under %v latency refused: %v", lat, err)}
	}
	defer a.Release(e.ctx)
	flight := time.Duration(g.Ret - g.Call)
	m := map[string]float64{"flight_ms": millis(flight), "validity_left_at_return_ms": millis(time.Duration(g.ValidUntil.UnixNano() - g.Ret))}
	if bad := avViolation(g, acquireReq{Try: true, TTL: e.ttl}); bad != "" {
		return observation{detail: fmt.Sprintf("%s after %v in flight", bad, flight), metrics: m}
	}
	return observation{held: true, detail: fmt.Sprintf("validity counted from before the request (%v in flight, %v left at return)",
		flight.Round(time.Millisecond), time.Duration(g.ValidUntil.UnixNano()-g.Ret).Round(time.Millisecond)), metrics: m}
}

// s11: the holder is black-holed from the servers for 3 TTLs: it must learn
// it lost the lease before another client's acquire returns, and the other
// client must get the key within TTL plus slack.
func s11(e *env) observation {
	a, b := e.local("a"), e.local("b")
	if _, err := a.Acquire(e.ctx, e.key, acquireReq{TTL: e.ttl, AutoExtend: time.Hour}); err != nil {
		e.t.Fatalf("acquire: %v", err)
	}
	link := e.h.Links("a")
	cut := time.Now()
	e.blackhole(link)
	gb, err := b.Acquire(withTimeout(e, 3*e.ttl), e.key, acquireReq{TTL: e.ttl, RetryMax: 20 * time.Millisecond})
	took := time.Since(cut)
	if err == nil {
		e.section(b, gb, time.Millisecond)
		_ = b.Release(e.ctx)
	}
	sleepCtx(e.ctx, time.Until(cut.Add(3*e.ttl)))
	e.heal(link)
	lost, lostAt := a.Lost()
	_ = a.Release(e.ctx)
	m := map[string]float64{"reacquire_s": took.Seconds()}
	me, detail := e.checkME()
	switch {
	case err != nil:
		return observation{detail: fmt.Sprintf("DF: nobody acquired while the holder was cut off: %v", err), metrics: m}
	case !lost:
		return observation{detail: "LN: the cut-off holder was never told its lease was lost; " + detail, metrics: m}
	case !me:
		return observation{detail: detail, metrics: m}
	}
	m["ln_margin_ms"] = millis(time.Duration(gb.Ret - lostAt))
	if late := lateNotice(e, a, gb); late != "" {
		return observation{detail: late, metrics: m}
	}
	return observation{held: true, detail: fmt.Sprintf("holder knew %v before B's acquire returned; %s", time.Duration(gb.Ret-lostAt).Round(time.Millisecond), detail), metrics: m}
}

// lateNotice judges the lost-lease notification (LN) of holder a against
// the acquisition gb of the next holder: Done must close no later than
// gb returned, give or take lnTolerance. The holder's section already ends
// at its validity in the history (a live holder knows it); this checks the
// notification itself, with room for the scheduling delay of the goroutine
// that watches Done on a loaded machine.
func lateNotice(e *env, a contender, gb grant) string {
	l, ok := a.(*local)
	if !ok {
		return ""
	}
	doneAt := l.DoneAt()
	if late := time.Duration(doneAt - gb.Ret); doneAt != 0 && late > lnTolerance(e.ttl) {
		return fmt.Sprintf("LN: Done closed %v after the next holder's acquire returned (tolerance %v)", late.Round(time.Millisecond), lnTolerance(e.ttl))
	}
	return ""
}

// lnTolerance is how late a lost-lease notification may be observed: the
// larger of 50 ms and TTL/20.
func lnTolerance(ttl time.Duration) time.Duration { return max(50*time.Millisecond, ttl/20) }

// s33: an operator revokes the lock while it is held: how long until the
// holder learns it (measured, with automatic extension on).
func s33(e *env) observation {
	a := e.local("a")
	if _, err := a.Acquire(e.ctx, e.key, acquireReq{TTL: e.ttl, AutoExtend: time.Hour}); err != nil {
		e.t.Fatalf("acquire: %v", err)
	}
	at := time.Now()
	if err := e.h.Revoke(e.ctx, e.key); err != nil {
		e.t.Fatalf("revoke: %v", err)
	}
	notified := eventually(e.ctx, 3*e.ttl, func() bool { lost, _ := a.Lost(); return lost })
	_, lostAt := a.Lost()
	err := a.Release(e.ctx)
	if !notified {
		return brokeObs("holder not notified within 3 TTLs of the revocation")
	}
	lat := time.Duration(lostAt - at.UnixNano())
	if !errors.Is(err, distlock.ErrLeaseLost) {
		return brokeObs("release after revocation returned %v, want ErrLeaseLost", err)
	}
	return observation{held: true, detail: fmt.Sprintf("notified %v after revocation", lat.Round(time.Millisecond)),
		metrics: map[string]float64{"ln_latency_ms": millis(lat)}}
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// s22: the acquire path is slower than the TTL (link latency of 0.6 TTL
// each way, through a latency client's proxies): the acquisition must fail
// rather than return a lease that is already expired, and the key must be
// usable by others afterwards.
func s22(e *env) observation {
	a, b := e.local(LatencyClient("a")), e.local("b")
	if _, err := a.Acquire(e.ctx, e.key+"/warm", acquireReq{Try: true, TTL: e.ttl}); err == nil {
		_ = a.Release(e.ctx)
	}
	link := e.h.Links(LatencyClient("a"))
	e.latency(link, e.ttl*6/10)
	g, err := a.Acquire(withTimeout(e, 5*e.ttl), e.key, acquireReq{Try: true, TTL: e.ttl})
	e.heal(link)
	if err == nil {
		bad := avViolation(g, acquireReq{Try: true, TTL: e.ttl})
		_ = a.Release(e.ctx)
		if bad != "" {
			return brokeObs("a lease came back although the round trip exceeded the TTL: %s", bad)
		}
		return brokeObs("a lease came back with validity although the round trip exceeded the TTL")
	}
	gb, berr := b.Acquire(withTimeout(e, 3*e.ttl), e.key, acquireReq{TTL: e.ttl, RetryMax: 50 * time.Millisecond})
	if berr != nil {
		return brokeObs("refused correctly (%v), but the key stayed blocked: %v", oneLine(err.Error()), berr)
	}
	e.section(b, gb, time.Millisecond)
	_ = b.Release(e.ctx)
	return heldObs("refused: %s; another client acquired afterwards", oneLine(err.Error()))
}

// s27: A's acquire reaches the server but the reply is lost, so A does not
// know whether it holds a (long) lease. The library must treat it as maybe
// acquired and clean up: B gets the key well before A's TTL would free it.
func s27(e *env) observation {
	a, b := e.local("a"), e.local("b")
	if _, err := a.Acquire(e.ctx, e.key+"/warm", acquireReq{Try: true, TTL: e.ttl}); err == nil {
		_ = a.Release(e.ctx)
	}
	long := 10 * e.ttl
	link := e.h.Links("a")
	e.dropReplies(link)
	_, aerr := a.Acquire(withTimeout(e, e.ttl/2), e.key, acquireReq{Try: true, TTL: long})
	e.heal(link)
	if aerr == nil {
		_ = a.Release(e.ctx)
		return observation{inconclusive: true, detail: "the acquire returned a lease although its reply was dropped"}
	}
	start := time.Now()
	gb, err := b.Acquire(withTimeout(e, long), e.key, acquireReq{TTL: e.ttl, RetryMax: 50 * time.Millisecond})
	took := time.Since(start)
	m := map[string]float64{"reacquire_s": took.Seconds(), "orphan_ttl_s": long.Seconds()}
	if err != nil {
		return observation{detail: fmt.Sprintf("the possibly acquired key was never freed: %v", err), metrics: m}
	}
	e.section(b, gb, time.Millisecond)
	_ = b.Release(e.ctx)
	me, detail := e.checkME()
	if took > 2*e.ttl {
		return observation{detail: fmt.Sprintf("B waited %v: the orphan was left to expire (TTL %v) instead of being cleaned up", took.Round(time.Millisecond), long), metrics: m}
	}
	return observation{held: me, detail: fmt.Sprintf("A saw %s; B acquired %v later (orphan TTL %v); %s", oneLine(aerr.Error()), took.Round(time.Millisecond), long, detail), metrics: m}
}
