package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/memlock"
)

func TestMain(m *testing.M) { Main(m) }

func scenarioByID(t *testing.T, id string) scenario {
	for _, sc := range catalogue {
		if sc.id == id {
			return sc
		}
	}
	t.Fatalf("no scenario %s", id)
	return scenario{}
}

// TestSelfTestOraclesBite runs scenarios against deliberately broken
// lockers: each must be judged a BUG, or the suite proves nothing.
func TestSelfTestOraclesBite(t *testing.T) {
	cases := []struct{ flaw, scenario, wantIn string }{
		{"grant-everyone", "S01", "resource oracle"},
		{"grant-everyone", "S01", "history oracle"},
		{"grant-everyone", "S06", "lost update"},
		{"silent-expiry", "S02", "acquired"},
		{"fence-regression", "S01", "fence order"},
		{"plain-delete", "S03", "freed B's key"},
		{"extend-always", "S04", "extend after expiry succeeded"},
	}
	for _, c := range cases {
		t.Run(c.flaw+"/"+c.scenario, func(t *testing.T) {
			h := brokenHarness(c.flaw)
			l, _ := h.NewLocker(context.Background(), "probe")
			res := runScenario(t, &h, l.Guarantees(), scenarioByID(t, c.scenario))
			if res.Verdict != Bug {
				t.Fatalf("%s on a %s locker: verdict %q (%s), want BUG", c.scenario, c.flaw, res.Verdict, res.Detail)
			}
			if !strings.Contains(res.Detail, c.wantIn) {
				t.Fatalf("detail %q does not mention %q", res.Detail, c.wantIn)
			}
			t.Logf("caught: %s", oneLine(res.Detail))
		})
	}
}

// TestSelfTestCorrectLockerPasses: the same scenarios keep their
// properties on the correct in-process locker (no false alarms).
func TestSelfTestCorrectLockerPasses(t *testing.T) {
	space := memlock.New(nil)
	h := Harness{Name: "selftest-mem", TTL: time.Second,
		NewLocker: func(context.Context, string) (distlock.Locker, error) { return space.NewHandle(), nil }}
	for _, id := range []string{"S01", "S02", "S03", "S04", "S06"} {
		res := runScenario(t, &h, space.Guarantees(), scenarioByID(t, id))
		if res.Verdict != Kept {
			t.Errorf("%s: %s (%s)", id, res.Verdict, res.Detail)
		}
	}
}

// TestUnrelatedFailureIsABugDespiteDocumentedLimitation: a scenario whose
// expectation documents a limitation (breaks) still reports a BUG when a
// different property fails.
func TestUnrelatedFailureIsABugDespiteDocumentedLimitation(t *testing.T) {
	sc := scenario{id: "SX", title: "documented limitation", property: "FENCE",
		expect: func(distlock.Guarantees, *Harness) expectation { return breaks("fences are not durable") },
		run:    func(*env) observation { return unrelatedObs("DF: nobody acquired") }}
	space := memlock.New(nil)
	h := Harness{Name: "selftest-unrelated", NewLocker: func(context.Context, string) (distlock.Locker, error) { return space.NewHandle(), nil }}
	if res := runScenario(t, &h, space.Guarantees(), sc); res.Verdict != Bug {
		t.Fatalf("verdict %q (%s), want BUG", res.Verdict, res.Detail)
	}
	sc.run = func(*env) observation { return brokeObs("fence went back") }
	if res := runScenario(t, &h, space.Guarantees(), sc); res.Verdict != BrokenAsDocumented {
		t.Fatalf("documented break: verdict %q, want %q", res.Verdict, BrokenAsDocumented)
	}
}

// TestExpectationWeakerThanSpecIsABug: where the specification table says
// OK for the harness's topology, a backend whose Guarantees make the suite expect
// a break fails the run unless the deviation is documented; a coverage
// gap or a documented deviation is noted in the report instead.
func TestExpectationWeakerThanSpecIsABug(t *testing.T) {
	space := memlock.New(nil)
	h := Harness{Name: "selftest-spec", Spec: "E3", NewLocker: func(context.Context, string) (distlock.Locker, error) { return space.NewHandle(), nil }}
	sc := scenario{id: "S16", title: "restart", property: "ME",
		expect: func(distlock.Guarantees, *Harness) expectation { return breaks("lock state is not durable") },
		run:    func(*env) observation { return brokeObs("overlap after the restart") }}
	if res := runScenario(t, &h, space.Guarantees(), sc); res.Verdict != Bug || !strings.Contains(res.Reason, "specification table") {
		t.Fatalf("E3 expected to break S16: verdict %q (%s), want BUG", res.Verdict, res.Detail)
	}
	h.Spec = "R1" // the spec says BREAKS there: a documented limitation
	if res := runScenario(t, &h, space.Guarantees(), sc); res.Verdict != BrokenAsDocumented || res.Spec != "" {
		t.Fatalf("R1 S16: verdict %q spec %q", res.Verdict, res.Spec)
	}
	if note, problem := checkSpec(&Harness{Spec: "PG"}, "S08", "breaks"); problem != "" || !strings.Contains(note, "deviates") {
		t.Fatalf("documented deviation: note %q problem %q", note, problem)
	}
	if note, problem := checkSpec(&Harness{Spec: "Z3"}, "S18", "n/a"); problem != "" || !strings.Contains(note, "not covered") {
		t.Fatalf("coverage gap: note %q problem %q", note, problem)
	}
}

// TestLateNoticeBites: the LN check of S11/S19 reports a holder that saw
// Done close later than the tolerance after the next holder's acquire
// returned, and accepts one within it (or before).
func TestLateNoticeBites(t *testing.T) {
	e := &env{ttl: time.Second}
	ret := time.Now().UnixNano()
	gb := grant{Ret: ret}
	for _, c := range []struct {
		late time.Duration
		bad  bool
	}{{-time.Millisecond, false}, {lnTolerance(e.ttl) / 2, false}, {lnTolerance(e.ttl) + 10*time.Millisecond, true}} {
		a := &local{doneAt: ret + int64(c.late)}
		if got := lateNotice(e, a, gb); (got != "") != c.bad {
			t.Errorf("Done %v after the next acquire: %q", c.late, got)
		}
	}
}
