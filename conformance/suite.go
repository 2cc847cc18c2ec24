package conformance

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// expectation is what a backend's Guarantees promise for a scenario.
type expectation struct {
	kind   string // "holds", "breaks", "measure", "n/a"
	reason string
}

func holds() expectation                   { return expectation{kind: "holds"} }
func breaks(why string) expectation        { return expectation{kind: "breaks", reason: why} }
func measure() expectation                 { return expectation{kind: "measure"} }
func notApplicable(why string) expectation { return expectation{kind: "n/a", reason: why} }
func notRun(why string) expectation        { return expectation{kind: "not run", reason: why} }

// observation is what a scenario saw.
type observation struct {
	held         bool
	inconclusive bool
	// unrelated marks a failure of a property other than the one a
	// documented limitation excuses (a scenario expected to break fence
	// order must still let someone acquire): it is a BUG whatever the
	// expectation.
	unrelated bool
	detail    string
	metrics   map[string]float64
}

// unrelatedObs is a failure no documented limitation excuses.
func unrelatedObs(detail string, args ...any) observation {
	return observation{unrelated: true, detail: fmt.Sprintf(detail, args...)}
}

func heldObs(detail string, args ...any) observation {
	return observation{held: true, detail: fmt.Sprintf(detail, args...)}
}
func brokeObs(detail string, args ...any) observation {
	return observation{detail: fmt.Sprintf(detail, args...)}
}

// scenario is one entry of the catalogue (docs/conformance.md).
type scenario struct {
	id, title, property string
	expect              func(g distlock.Guarantees, h *Harness) expectation
	run                 func(e *env) observation
}

// Run runs every scenario of the catalogue that the harness supports
// against one backend, as subtests, and writes the report. A scenario
// whose promised property breaks fails the test (verdict BUG).
func Run(t *testing.T, h Harness) {
	rep := &Report{Backend: h.Name, Short: testing.Short()}
	g := probeGuarantees(t, &h)
	for _, sc := range catalogue {
		t.Run(sc.id, func(t *testing.T) {
			res := runScenario(t, &h, g, sc)
			rep.add(res)
			t.Logf("%s %s: expected %s, observed %s: %s (%s)", sc.id, sc.title, res.Expected, res.Observed, res.Verdict, oneLine(res.Detail))
			if res.Verdict == Bug {
				t.Errorf("%s %s (%s): BUG: %s", sc.id, sc.title, sc.property, res.Detail)
			}
		})
	}
	if err := rep.write(ReportDir()); err != nil {
		t.Errorf("writing the report: %v", err)
	}
}

func probeGuarantees(t *testing.T, h *Harness) distlock.Guarantees {
	t.Helper()
	l, err := h.NewLocker(context.Background(), "probe")
	if err != nil {
		t.Fatalf("harness %s: NewLocker: %v", h.Name, err)
	}
	defer l.Close()
	g := l.Guarantees()
	if h.Guarantees != nil {
		g = h.Guarantees(g)
	}
	return g
}

var keySeq atomic.Int64

// runScenario runs one scenario and judges it; only infrastructure
// failures stop the test, property violations become the Result.
func runScenario(t *testing.T, h *Harness, g distlock.Guarantees, sc scenario) Result {
	res := Result{Backend: h.Name, Scenario: sc.id, Title: sc.title, Property: sc.property}
	exp := sc.expect(g, h)
	res.Expected, res.Reason = exp.kind, exp.reason
	if note, problem := checkSpec(h, sc.id, exp.kind); problem != "" {
		res.Verdict, res.Observed, res.Reason, res.Detail = Bug, "-", problem, problem
		return res
	} else if note != "" {
		res.Spec = note
	}
	switch exp.kind {
	case "n/a":
		res.Verdict, res.Observed, res.Detail = NotApplicable, "-", exp.reason
		return res
	case "not run":
		res.Verdict, res.Observed, res.Detail = NotRun, "-", exp.reason
		return res
	}
	watch := &stateWatch{}
	e := newEnv(t, watch.watch(h), g, sc.id)
	start := time.Now()
	obs := sc.run(e)
	obs = e.judgeFences(exp, obs, watch.lostAt.Load())
	res.Seconds = time.Since(start).Seconds()
	judge(&res, exp, obs)
	return res
}

// judge fills res's detail, metrics, observation and verdict from what
// the scenario expected and observed.
func judge(res *Result, exp expectation, obs observation) {
	res.Detail, res.Metrics = obs.detail, obs.metrics
	if exp.reason != "" {
		res.Detail = exp.reason + ". " + res.Detail
	}
	switch {
	case obs.unrelated:
		res.Observed, res.Verdict = "broke", Bug
		res.Detail += " (not the documented limitation)"
	case exp.kind == "measure":
		res.Observed, res.Verdict = "measured", Measured
		if !obs.held { // a measurement scenario can still catch a safety bug
			res.Observed, res.Verdict = "broke", Bug
		}
	case obs.inconclusive:
		res.Observed, res.Verdict = "inconclusive", Inconclusive
	case obs.held && exp.kind == "holds":
		res.Observed, res.Verdict = "held", Kept
	case obs.held:
		res.Observed, res.Verdict = "held", Inconclusive
		res.Detail += " (the limitation did not show in this run)"
	case exp.kind == "holds":
		res.Observed, res.Verdict = "broke", Bug
	default:
		res.Observed, res.Verdict = "broke", BrokenAsDocumented
	}
}

// env is one scenario's world: a unique key, a history, two resources.
type env struct {
	t       *testing.T
	h       *Harness
	g       distlock.Guarantees
	ctx     context.Context
	key     string
	ttl     time.Duration
	hist    *History
	plain   *resource // unfenced: ME oracle
	fenced  *resource // fenced: FSAFE oracle
	nextID  int
	clients []contender

	mu   sync.Mutex
	down map[int]serverState // servers a fault left killed or paused
}

func newEnv(t *testing.T, h *Harness, g distlock.Guarantees, id string) *env {
	ctx, cancel := context.WithTimeout(context.Background(), max(2*time.Minute, 8*h.ttl()))
	t.Cleanup(cancel)
	e := &env{
		t: t, h: h, g: g, ctx: ctx, ttl: h.ttl(), hist: &History{},
		key:   fmt.Sprintf("conformance/%s/%s/%d/%d", h.Name, id, time.Now().UnixNano(), keySeq.Add(1)),
		plain: newResource(false), fenced: newResource(true), down: map[int]serverState{},
	}
	t.Cleanup(e.restoreServers) // runs before the cancel above: cleanups run last-in first-out
	return e
}

// local opens an in-process contender with its own Locker.
func (e *env) local(client string) contender {
	e.t.Helper()
	l, err := e.h.NewLocker(e.ctx, client)
	if err != nil {
		e.t.Fatalf("NewLocker(%s): %v", client, err)
	}
	e.t.Cleanup(func() { _ = l.Close() })
	e.nextID++
	c := newLocal(e.nextID, l, e.hist)
	e.clients = append(e.clients, c)
	return c
}

// process starts a contender in a separate OS process.
func (e *env) process(client string) *process {
	e.t.Helper()
	e.nextID++
	p := startProcess(e.t, e.nextID, e.h.URL(client), e.hist)
	e.clients = append(e.clients, p)
	return p
}

// section runs one critical section on both resources: read, sleep, and
// write back unless the holder learned its lease was lost meanwhile.
func (e *env) section(c contender, g grant, d time.Duration) {
	pv, fv := e.plain.read(), e.fenced.read()
	sleepCtx(e.ctx, d)
	if lost, _ := c.Lost(); lost {
		return // a careful holder stops when told
	}
	e.plain.write(c.ID(), g.Fence, pv)
	e.fenced.write(c.ID(), g.Fence, fv)
}

// checkME judges mutual exclusion with both oracles.
func (e *env) checkME() (bool, string) {
	var problems []string
	if lost := e.plain.lostUpdates(); len(lost) > 0 {
		problems = append(problems, fmt.Sprintf("resource oracle: %d lost update(s), first: %s", len(lost), lost[0]))
	}
	r := CheckMutex(e.hist.Ops(), 20*time.Second, vizDir())
	if r.Inconclusive {
		problems = append(problems, "history check timed out")
	} else if !r.OK {
		problems = append(problems, "history oracle (mutex model): "+r.Detail+viz(r))
	}
	if len(problems) == 0 {
		w, _ := e.plain.stats()
		return true, fmt.Sprintf("no overlap: %d ops checked, %d resource writes", r.Ops, w)
	}
	return false, strings.Join(problems, "; ")
}

// checkFence judges fence order with the fenced-mutex history model.
func (e *env) checkFence() (bool, string) {
	if e.g.Fence == distlock.FenceNone {
		return true, "no fence order promised"
	}
	r := CheckFence(e.hist.Ops(), 20*time.Second, vizDir())
	if r.OK {
		return true, "fences increase in acquisition order"
	}
	return false, "fence order: " + r.Detail + viz(r)
}

// checkFSAFE judges the fenced resource.
func (e *env) checkFSAFE() (bool, string) {
	w, rej := e.fenced.stats()
	if lost := e.fenced.lostUpdates(); len(lost) > 0 {
		return false, fmt.Sprintf("fenced resource accepted a stale write: %s", lost[0])
	}
	return true, fmt.Sprintf("fenced resource: %d writes accepted, %d stale writes rejected", w, rej)
}

func viz(r CheckResult) string {
	if r.Visualization == "" {
		return ""
	}
	return " (visualization: " + r.Visualization + ")"
}

func vizDir() string {
	return ReportDir() + "/histories"
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// eventually polls cond every 10 ms until it holds or d passes.
func eventually(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if cond() {
			return true
		}
		sleepCtx(ctx, 10*time.Millisecond)
	}
	return cond()
}

// withTimeout derives a context bounded by d, cancelled when the test ends.
func withTimeout(e *env, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(e.ctx, d)
	e.t.Cleanup(cancel)
	return ctx
}
