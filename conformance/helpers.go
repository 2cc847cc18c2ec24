package conformance

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// helpersCatalogue is the helper scenario list (docs/conformance.md,
// "Helper scenarios"): the everyday helpers built on the Locker
// interface (distlock.Do, package leader, package multilock, the
// Inspector functions distlock.Inspect, List and ForceRelease), run over
// each backend. The expectations read the Guarantees as the backend
// scenarios' do.
var helpersCatalogue = []scenario{
	{"H1", "Do: fn's context cancelled on loss, never while held", "LN through fn's ctx, no false cancel", expectH1, h1},
	{"H2", "leader: crash (or revocation) and resignation hand over", "ME FENCE, failover time", expectH2, h2},
	{"H3", "multilock: 4 clients take random overlapping key sets in random order", "DF, ME per key, FENCE", always, h3},
	{"H4", "inspection agrees with the truth: held, released, expired, crashed, force-released", "Inspect and List = truth, no leak; LN FENCE NR after ForceRelease", always, h4},
}

// helperClient is the client name (Harness.NewLocker, Harness.URL) of
// every helper scenario's client except the holder H1 cuts off
// (helperCutClient): a harness sets up each client name's network path
// on first use, which costs a command per server, and no other helper
// scenario faults a client's links.
const (
	helperClient    = "helpers"
	helperCutClient = "helpers-cut"
)

// helperBackends is how many backends RunHelpers runs at once: each
// starts servers of its own, which a 2-core host cannot start all
// together, and H3 keeps the servers busy.
const helperBackends = 2

// RunHelpers runs the helper scenarios (helpersCatalogue) on every
// backend, helperBackends at a time, each on servers of its own (New),
// the scenarios of one backend one after the other, as subtests named
// Backend.Name/<scenario>. Each backend's results are written to
// helpers.<name>.json, its column of the matrix's helpers table. A BUG
// verdict fails the test.
func RunHelpers(t *testing.T, backends ...Backend) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, helperBackends)
	for _, b := range backends {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			t.Run(b.Name, func(t *testing.T) { runHelpers(t, b.New) })
		})
	}
	wg.Wait()
}

func runHelpers(t *testing.T, newHarness func(t *testing.T) Harness) {
	start := time.Now()
	h := newHarness(t)
	g := probeGuarantees(t, &h)
	started := time.Since(start)
	rep := &Report{Backend: h.Name, Short: testing.Short(), Helpers: true, file: "helpers." + h.Name}
	for _, sc := range helpersCatalogue {
		t.Run(sc.id, func(t *testing.T) {
			res := runScenario(t, &h, g, sc)
			rep.add(res)
			t.Logf("%s %s: expected %s, observed %s: %s (%.1fs: %s)", sc.id, sc.title, res.Expected, res.Observed, res.Verdict, res.Seconds, oneLine(res.Detail))
			if res.Verdict == Bug {
				t.Errorf("%s %s (%s): BUG: %s", sc.id, sc.title, sc.property, res.Detail)
			}
		})
	}
	t.Logf("%s: servers up in %v, helper scenarios in %v", h.Name, started.Round(100*time.Millisecond), (time.Since(start) - started).Round(100*time.Millisecond))
	if err := rep.write(ReportDir()); err != nil {
		t.Errorf("writing the report: %v", err)
	}
}

// locker opens a Locker for client, closed when the scenario ends.
func (e *env) locker(client string) distlock.Locker {
	e.t.Helper()
	l, err := e.h.NewLocker(e.ctx, client)
	if err != nil {
		e.t.Fatalf("NewLocker(%s): %v", client, err)
	}
	e.t.Cleanup(func() { _ = l.Close() })
	return l
}

// helperRetry is the retry delay of the helpers' blocking acquisitions
// on backends that poll, as in the backend scenarios.
func helperRetry() distlock.Option {
	return distlock.WithRetryDelay(2*time.Millisecond, 20*time.Millisecond)
}

// waitFor waits until ch is closed or d passes; it reports whether ch
// closed.
func waitFor(ctx context.Context, ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
