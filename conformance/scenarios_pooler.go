package conformance

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/distlock/distlock"
)

// Scenarios S28 and S29: advisory locks behind connection pools.

// expectS28: a backend that offers a pooler URL promises that locking
// through it is either refused or safe: ME and DF hold whatever the
// proxy does to its sessions.
func expectS28(_ distlock.Guarantees, h *Harness) expectation {
	if h.PoolerURL == nil {
		return notApplicable("needs a transaction-pooling proxy in front of the servers")
	}
	return holds()
}

// s28: two clients open the backend through a transaction-pooling proxy
// (PgBouncer) and contend on one key. Session-level locks would land on
// whichever server connection the proxy picked and stay there for other
// clients to inherit, so the backend must detect the proxy and refuse,
// or lock in a way the proxy keeps intact. Judged: no overlap (both
// oracles), and afterwards a direct client gets the key within 2 TTLs
// (no lock stranded on a pooled server connection).
func s28(e *env) observation {
	var cs []contender
	for _, name := range []string{"pooled-a", "pooled-b"} {
		l, err := distlockOpen(e, e.h.PoolerURL(name))
		if err != nil {
			if !errors.Is(err, distlock.ErrInvalidArgument) { // not a deliberate refusal
				e.t.Fatalf("open through the proxy: %v", err)
			}
			return heldObs("refused at open: %v", oneLine(err.Error()))
		}
		e.nextID++
		c := newLocal(e.nextID, l, e.hist)
		e.clients = append(e.clients, c)
		cs = append(cs, c)
	}
	var refusals []error
	granted := 0
	for round := 0; round < 4; round++ {
		for _, c := range cs {
			g, err := c.Acquire(withTimeout(e, 3*e.ttl), e.key, acquireReq{TTL: e.ttl, RetryMax: 20 * time.Millisecond})
			if err != nil {
				refusals = append(refusals, err)
				continue
			}
			granted++
			e.section(c, g, 5*time.Millisecond)
			_ = c.Release(e.ctx)
		}
	}
	me, detail := e.checkME()
	probe := e.local("direct")
	g, derr := probe.Acquire(withTimeout(e, 2*e.ttl), e.key, acquireReq{TTL: e.ttl, RetryMax: 20 * time.Millisecond})
	if derr == nil {
		e.section(probe, g, time.Millisecond)
		_ = probe.Release(e.ctx)
	}
	m := map[string]float64{"granted": float64(granted), "refused": float64(len(refusals))}
	how := fmt.Sprintf("%d acquisitions granted through the proxy", granted)
	if len(refusals) > 0 {
		how = fmt.Sprintf("%d of %d refused (%s), %d granted", len(refusals), len(refusals)+granted, oneLine(refusals[0].Error()), granted)
	}
	for _, err := range refusals {
		if !errors.Is(err, distlock.ErrInvalidArgument) { // the proxy failed, the backend did not refuse
			return observation{inconclusive: true, detail: fmt.Sprintf("%s; an acquisition failed without a deliberate refusal: %v", how, oneLine(err.Error())), metrics: m}
		}
	}
	switch {
	case !me:
		return observation{detail: how + "; " + detail, metrics: m}
	case derr != nil:
		return observation{detail: fmt.Sprintf("%s; DF: a direct client could not get the key afterwards (lock stranded on a pooled connection?): %v", how, derr), metrics: m}
	}
	return observation{held: true, detail: how + "; a direct client got the key afterwards; " + detail, metrics: m}
}

// expectS29: with a deliberately unpinned locker to compare against, the
// backend's own (pinned) locker must keep ME and DF under the workload
// that breaks the unpinned one.
func expectS29(_ distlock.Guarantees, h *Harness) expectation {
	if h.UnpinnedLocker == nil {
		return notApplicable("needs an unpinned locker to compare against")
	}
	return holds()
}

// s29: two holders share one locker and contend; then a direct client
// must get the key. Run first on the unpinned locker (lock and unlock on
// whatever pooled connection comes next: the unlock misses, the lock
// stays on a pooled connection, and the next lock on that connection
// re-enters it), then on the backend's own locker. The unpinned run is
// expected to break ME or DF (reported, not judged); if it does not, the
// workload demonstrated nothing and the result is inconclusive.
func s29(e *env) observation {
	u := newEnv(e.t, e.h, e.g, "S29-unpinned")
	ul, err := e.h.UnpinnedLocker(e.ctx, "unpinned")
	if err != nil {
		e.t.Fatalf("UnpinnedLocker: %v", err)
	}
	e.t.Cleanup(func() { _ = ul.Close() })
	uBroke, uDetail := sharedLockerRun(u, ul)

	pl, err := e.h.NewLocker(e.ctx, "pinned")
	if err != nil {
		e.t.Fatalf("NewLocker: %v", err)
	}
	e.t.Cleanup(func() { _ = pl.Close() })
	pBroke, pDetail := sharedLockerRun(e, pl)
	detail := fmt.Sprintf("unpinned: %s; pinned: %s", uDetail, pDetail)
	switch {
	case pBroke:
		return brokeObs("%s", detail)
	case !uBroke:
		return observation{inconclusive: true, detail: "the unpinned locker did not break either: " + detail}
	}
	return heldObs("%s", detail)
}

// sharedLockerRun has two contenders share l for 6 rounds each, then a
// direct client take the key; it reports whether ME or DF broke.
func sharedLockerRun(e *env, l distlock.Locker) (broke bool, detail string) {
	cs := []contender{newLocal(201, l, e.hist), newLocal(202, l, e.hist)}
	failed, _ := e.contend(cs, 6, 5*time.Millisecond, acquireReq{TTL: e.ttl, RetryMax: 20 * time.Millisecond})
	me, meDetail := e.checkME()
	probe := e.local("direct-" + strings.ToLower(e.key[len(e.key)-4:]))
	g, err := probe.Acquire(withTimeout(e, 2*e.ttl), e.key, acquireReq{TTL: e.ttl, RetryMax: 20 * time.Millisecond})
	df := err == nil
	if df {
		e.section(probe, g, time.Millisecond)
		_ = probe.Release(e.ctx)
	}
	parts := []string{fmt.Sprintf("%d acquisitions failed", failed)}
	if !me {
		parts = append(parts, "ME broke: "+meDetail)
	} else {
		parts = append(parts, meDetail)
	}
	if !df {
		parts = append(parts, fmt.Sprintf("DF broke: a direct client could not get the key afterwards (%v)", oneLine(err.Error())))
	}
	return !me || !df, strings.Join(parts, "; ")
}

// distlockOpen opens a Locker by URL for a scenario, closed at its end.
func distlockOpen(e *env, url string) (distlock.Locker, error) {
	l, err := distlock.Open(e.ctx, url)
	if err != nil {
		return nil, err
	}
	e.t.Cleanup(func() { _ = l.Close() })
	return l, nil
}
