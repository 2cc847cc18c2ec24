package conformance

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/distlock/distlock/migrate"
)

// freeze is M5 (old false) and M6 (old true): a both-phase holder A,
// extended automatically, while the servers of one backend (the
// harness's Majority set: enough to make it unavailable) are frozen for
// 3 TTLs. A client C of the other, healthy backend alone (phase from for
// M5, to for M6) waits for the key meanwhile. A must be told of the loss
// (Done) before C is granted the key (the history check), and C must get
// it within a TTL and a second of A learning it (A's healthy side was
// released, not left locked under its automatic extension). Once the
// servers resume, a new both-phase client must acquire (recovery).
func (m *migEnv) freeze(old bool) observation {
	idx, healthy, side := m.toMajority, migrate.PhaseFrom, "new"
	if old {
		idx, healthy, side = m.fromMajority, migrate.PhaseTo, "old"
	}
	if len(idx) == 0 {
		m.t.Fatalf("the %s backend's harness has no Majority set to freeze", side)
	}
	a, c := m.worker(migrate.PhaseBoth, "holder"), m.worker(healthy, "healthy")
	m.warm(a)
	m.warm(c)
	if _, err := a.Acquire(withTimeout(m.env, 10*m.ttl), m.key, acquireReq{TTL: m.ttl, AutoExtend: time.Hour}); err != nil {
		m.t.Fatalf("holder: %v", err)
	}
	type result struct {
		g   grant
		err error
	}
	cres := make(chan result, 1)
	go func() { // owned: read below on every path; ends by its timeout
		ctx, cancel := context.WithTimeout(m.ctx, 10*m.ttl)
		defer cancel()
		g, err := c.Acquire(ctx, m.key, acquireReq{TTL: m.ttl, RetryMax: 50 * time.Millisecond})
		cres <- result{g, err}
	}()
	sleepCtx(m.ctx, m.ttl) // A holds under automatic extension while C waits
	pausedAt := time.Now()
	m.pause(idx)
	told := eventually(m.ctx, 3*m.ttl, func() bool { lost, _ := a.Lost(); return lost })
	_, lostAt := a.Lost()
	wait := time.Until(pausedAt.Add(3 * m.ttl))
	if told {
		wait = time.Until(time.Unix(0, lostAt).Add(m.ttl + time.Second))
	}
	var r result
	got := false
	select {
	case r = <-cres:
		got = true
	case <-time.After(max(wait, 0)):
	}
	sleepCtx(m.ctx, time.Until(pausedAt.Add(3*m.ttl)))
	unpausedAt := time.Now() // the servers resume during the call below
	m.unpause(idx)
	if !got {
		r = <-cres
	}
	if r.err == nil {
		_ = c.Release(m.ctx)
	}
	_ = a.Release(m.ctx)
	b := m.worker(migrate.PhaseBoth, "after")
	_, berr := b.Acquire(withTimeout(m.env, 15*m.ttl), m.key, acquireReq{TTL: m.ttl, RetryMax: 100 * time.Millisecond})
	recovery := time.Since(unpausedAt)
	if berr == nil {
		_ = b.Release(m.ctx)
	}

	metrics := map[string]float64{"recovery_s": recovery.Seconds()}
	var problems []string
	if told {
		metrics["lost_after_freeze_s"] = time.Unix(0, lostAt).Sub(pausedAt).Seconds()
	} else {
		problems = append(problems, fmt.Sprintf("LN: the both holder was not told its lease was lost within 3 TTLs of freezing the %s backend", side))
	}
	switch {
	case r.err != nil:
		problems = append(problems, fmt.Sprintf("the %v-phase client never acquired the key on the healthy backend: %v", healthy, r.err))
	case !got && told:
		problems = append(problems, fmt.Sprintf("the healthy backend's key stayed locked: the %v-phase client acquired it %v after the holder learned of the loss (more than TTL + 1 s)",
			healthy, time.Duration(r.g.Ret-lostAt).Round(time.Millisecond)))
	}
	if r.err == nil && told {
		metrics["handoff_s"] = time.Duration(r.g.Ret - lostAt).Seconds()
	}
	if berr != nil {
		problems = append(problems, fmt.Sprintf("DF: no both-phase client acquired within 15 TTLs of the servers resuming: %v", berr))
	}
	hist := CheckMutex(m.hist.Ops(), 20*time.Second, vizDir())
	if !hist.OK && !hist.Inconclusive {
		problems = append(problems, "history oracle (mutex model): "+hist.Detail+viz(hist))
	}
	switch {
	case len(problems) > 0:
		return observation{detail: strings.Join(problems, "; "), metrics: metrics}
	case hist.Inconclusive:
		return observation{inconclusive: true, detail: "history check timed out", metrics: metrics}
	}
	return observation{held: true, metrics: metrics, detail: fmt.Sprintf(
		"the holder learned of the loss %.1fs into the freeze; the %v-phase client acquired %.2fs after that, no overlap (%d ops checked); a both client acquired %.1fs after the servers resumed",
		metrics["lost_after_freeze_s"], healthy, metrics["handoff_s"], hist.Ops, recovery.Seconds())}
}

// m8: with the new backend's Majority servers frozen, a both-phase
// client B under automatic extension takes the old lock and waits for
// the new one. It must let the old lock go after about a TTL (its
// validity when the wait began), so that a from-phase client C, waiting
// from just after B's call, gets the key within 2 TTLs and a second. Once
// the servers resume, B acquires (DF), with no overlap in the history.
func m8(m *migEnv) observation {
	b, c := m.worker(migrate.PhaseBoth, "waiter"), m.worker(migrate.PhaseFrom, "healthy")
	m.warm(b)
	m.warm(c)
	pausedAt := time.Now()
	m.pause(m.toMajority)
	type result struct {
		g   grant
		err error
	}
	bres := make(chan result, 1)
	go func() { // owned: read below; ends by its timeout
		ctx, cancel := context.WithTimeout(m.ctx, 20*m.ttl)
		defer cancel()
		g, err := b.Acquire(ctx, m.key, acquireReq{TTL: m.ttl, AutoExtend: time.Hour, RetryMax: 100 * time.Millisecond})
		bres <- result{g, err}
	}()
	sleepCtx(m.ctx, 100*time.Millisecond) // B holds the old lock and waits for the new one
	bound := 2*m.ttl + time.Second
	cg, cerr := c.Acquire(withTimeout(m.env, bound), m.key, acquireReq{TTL: m.ttl, RetryMax: 50 * time.Millisecond})
	if cerr == nil {
		_ = c.Release(m.ctx)
	}
	sleepCtx(m.ctx, time.Until(pausedAt.Add(3*m.ttl)))
	unpausedAt := time.Now()
	m.unpause(m.toMajority)
	r := <-bres
	if r.err == nil {
		_ = b.Release(m.ctx)
	}
	metrics := map[string]float64{}
	var problems []string
	if cerr != nil {
		problems = append(problems, fmt.Sprintf("the old lock stayed held: the from-phase client did not acquire within %v while the both client waited for the frozen new backend: %v", bound, cerr))
	} else {
		metrics["from_wait_s"] = time.Duration(cg.Ret - cg.Call).Seconds()
	}
	if r.err != nil {
		problems = append(problems, fmt.Sprintf("DF: the both client did not acquire within 20 TTLs: %v", r.err))
	} else {
		metrics["both_after_resume_s"] = time.Unix(0, r.g.Ret).Sub(unpausedAt).Seconds()
	}
	hist := CheckMutex(m.hist.Ops(), 20*time.Second, vizDir())
	if !hist.OK && !hist.Inconclusive {
		problems = append(problems, "history oracle (mutex model): "+hist.Detail+viz(hist))
	}
	switch {
	case len(problems) > 0:
		return observation{detail: strings.Join(problems, "; "), metrics: metrics}
	case hist.Inconclusive:
		return observation{inconclusive: true, detail: "history check timed out", metrics: metrics}
	}
	return observation{held: true, metrics: metrics, detail: fmt.Sprintf(
		"the from-phase client acquired %.2fs after its call; the both client acquired %.2fs after the servers resumed; no overlap (%d ops checked)",
		metrics["from_wait_s"], metrics["both_after_resume_s"], hist.Ops)}
}
