package conformance

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/distlock/distlock"
)

// Scenarios S12, S26, S30 and S32.

// expectS12: a client's wall-clock jump. Not run: Go measures every
// duration on the monotonic clock, libfaketime does not reach Go programs,
// and a test must not move the machine's clock.
func expectS12(distlock.Guarantees, *Harness) expectation {
	return notRun("the test process's wall clock cannot be moved (libfaketime does not affect Go; the machine clock is shared); " +
		"validity is computed on the monotonic clock (internal/validity)")
}

func s12(*env) observation { return observation{} }

func expectS26(g distlock.Guarantees, h *Harness) expectation {
	if !g.WaiterSessions {
		return notApplicable("waiters hold no server-side session")
	}
	return needsLinks(g, h)
}

// s26: while A holds the key, waiter W is cut off from the servers for
// 4 TTLs: W's blocking Acquire must return an error within that time
// (its session ended: it must not wait on, nor be granted the key later
// on a dead session), and after A releases a third client C must get the
// key promptly (W's queue entry must not block anyone).
func s26(e *env) observation {
	a, w, c := e.local("a"), e.local("w"), e.local("c")
	if _, err := a.Acquire(e.ctx, e.key, acquireReq{TTL: e.ttl, AutoExtend: time.Hour}); err != nil {
		e.t.Fatalf("acquire: %v", err)
	}
	type result struct {
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() { // owned: bounded by its context, joined below
		_, err := w.Acquire(withTimeout(e, 10*e.ttl), e.key, acquireReq{TTL: e.ttl})
		done <- result{err, time.Now()}
	}()
	sleepCtx(e.ctx, e.ttl/2) // W is queued
	link := e.h.Links("w")
	cut := time.Now()
	e.blackhole(link)
	var r result
	returned := false
	select {
	case r = <-done:
		returned = true
	case <-time.After(4 * e.ttl):
	}
	e.heal(link)
	if !returned {
		r = <-done // bounded by its 10-TTL context
	}
	if r.err == nil {
		_ = w.Release(e.ctx)
	}
	took := r.at.Sub(cut)
	_ = a.Release(e.ctx)
	gc, errC := c.Acquire(withTimeout(e, 3*e.ttl), e.key, acquireReq{TTL: e.ttl})
	if errC == nil {
		e.section(c, gc, time.Millisecond)
		_ = c.Release(e.ctx)
	}
	m := map[string]float64{"waiter_return_s": took.Seconds()}
	me, detail := e.checkME()
	switch {
	case !me:
		return observation{detail: detail, metrics: m}
	case r.err == nil:
		return observation{detail: "the cut-off waiter was granted the key", metrics: m}
	case !returned:
		return observation{detail: fmt.Sprintf("the cut-off waiter did not return within 4 TTLs (it returned %v after the cut: %v)", took.Round(time.Millisecond), r.err), metrics: m}
	case errC != nil:
		return observation{detail: fmt.Sprintf("DF: after the holder released, C could not acquire within 3 TTLs: %v", errC), metrics: m}
	}
	return observation{held: true, detail: fmt.Sprintf("the cut-off waiter returned %v after the cut (%v); C then acquired; %s",
		took.Round(time.Millisecond), r.err, detail), metrics: m}
}

func expectS30(g distlock.Guarantees, h *Harness) expectation {
	if exp, ok := needsProcesses(g, h); !ok {
		return exp
	}
	return holds()
}

// s30keys are awkward but legal keys: each must name the same lock in
// every process, and no two of them (nor near neighbours) may collide.
var s30keys = []string{"plain", "with/slashes/a/b", "ünïcödé ✓ 日本", "spaces and: colons?&=#%", strings.Repeat("long", 64), "."}

// s30: a separate process holds each awkward key; this process must find
// each held (same key derivation across processes), every near neighbour
// free (no collision), and each free again after the release.
func s30(e *env) observation {
	p := e.process("p")
	c := e.local("c")
	var held []string
	for _, k := range s30keys {
		key := e.key + "/" + k
		if _, err := p.Acquire(e.ctx, key, acquireReq{Try: true, TTL: 10 * e.ttl}); err != nil {
			return brokeObs("worker process could not take %q: %v", k, err)
		}
		_, err := c.Acquire(e.ctx, key, acquireReq{Try: true, TTL: e.ttl})
		if err == nil {
			_ = c.Release(e.ctx)
			_ = p.Release(e.ctx)
			return brokeObs("key %q held by another process was granted here: derivations differ", k)
		}
		if !errors.Is(err, distlock.ErrNotAcquired) {
			_ = p.Release(e.ctx)
			return observation{inconclusive: true, detail: fmt.Sprintf("TryAcquire(%q): %v", k, err)}
		}
		for _, n := range []string{k + " ", k + "/", strings.ToUpper(k) + "x", string([]rune(k)[:len([]rune(k))-1])} {
			if n == k || n == "" {
				continue
			}
			g, err := c.Acquire(e.ctx, e.key+"/"+n, acquireReq{Try: true, TTL: e.ttl})
			if err != nil {
				_ = p.Release(e.ctx)
				return brokeObs("neighbour %q of held key %q not free: %v", n, k, err)
			}
			e.section(c, g, 0)
			_ = c.Release(e.ctx)
		}
		if err := p.Release(e.ctx); err != nil {
			return brokeObs("worker release of %q: %v", k, err)
		}
		g, err := c.Acquire(withTimeout(e, 3*e.ttl), key, acquireReq{TTL: e.ttl})
		if err != nil {
			return brokeObs("key %q not free after the other process released it: %v", k, err)
		}
		e.section(c, g, 0)
		_ = c.Release(e.ctx)
		held = append(held, k)
	}
	me, detail := e.checkME()
	if !me {
		return brokeObs("%s", detail)
	}
	return heldObs("%d awkward keys named the same lock in both processes; their near neighbours were free; %s", len(held), detail)
}

func expectS32(_ distlock.Guarantees, h *Harness) expectation {
	if h.GuardedWrite == nil || h.GuardedRead == nil {
		return notApplicable("needs a guarded write inside the coordinator")
	}
	return holds()
}

// s32: A holds without extension and writes through the coordinator's
// guard; then A stalls (to the lock service, a paused holder) past its
// TTL, B acquires and writes, and A's late write must be refused and leave
// B's value in place. A's first write must succeed, so a guard that
// refuses everything fails the scenario too.
func s32(e *env) observation {
	la, lb := e.leaseLocker("a"), e.leaseLocker("b")
	a, err := la.Acquire(e.ctx, e.key, distlock.WithTTL(e.ttl))
	if err != nil {
		e.t.Fatalf("acquire: %v", err)
	}
	defer a.Release(e.ctx)
	if err := e.h.GuardedWrite(e.ctx, a, "a-live"); err != nil {
		return brokeObs("the holder's own guarded write was refused: %v", err)
	}
	b, err := lb.Acquire(withTimeout(e, 10*e.ttl), e.key, distlock.WithTTL(e.ttl), distlock.WithAutoExtend(time.Hour))
	if err != nil {
		return brokeObs("DF: B never acquired within 10 TTLs after A stopped extending: %v", err)
	}
	defer b.Release(e.ctx)
	if err := e.h.GuardedWrite(e.ctx, b, "b"); err != nil {
		return brokeObs("the new holder's guarded write was refused: %v", err)
	}
	lateErr := e.h.GuardedWrite(e.ctx, a, "a-stale")
	v, err := e.h.GuardedRead(e.ctx, e.key)
	if err != nil {
		e.t.Fatalf("guarded read: %v", err)
	}
	switch {
	case lateErr == nil:
		return brokeObs("the stalled holder's late write was applied (value now %q)", v)
	case v != "b":
		return brokeObs("value %q after the late write was refused, want %q", v, "b")
	}
	return heldObs("late write refused (%v); value stays %q", lateErr, v)
}

// leaseLocker opens a Locker for scenarios that need the Lease itself.
func (e *env) leaseLocker(client string) distlock.Locker {
	e.t.Helper()
	l, err := e.h.NewLocker(e.ctx, client)
	if err != nil {
		e.t.Fatalf("NewLocker(%s): %v", client, err)
	}
	e.t.Cleanup(func() { _ = l.Close() })
	return l
}
