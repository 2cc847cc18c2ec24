package conformance

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// defaultTTLLanes are the scenarios that run once more at
// distlock.DefaultTTL (RunDefaultTTL): those where a timeout inside the
// library or the servers that does not scale with the TTL (a TCP
// keepalive, a session or node timeout, a follower's sync limit) can hide
// below the suite's short TTL. A cut-off holder (S11), a holder that
// stalls past its TTL (S03), a frozen leader (S15), and a member cut off
// from its peers with its client (S19 the leader, S36 a follower). Each
// lane runs on servers of its own, at the same time as the other lanes;
// the scenarios of a lane run one after the other.
var defaultTTLLanes = [][]string{{"S11"}, {"S03", "S15"}, {"S19", "S36"}}

// Backend names a harness constructor for RunDefaultTTL. New starts
// servers of its own each time it is called; their lifetime is t's.
type Backend struct {
	Name string
	New  func(t *testing.T) Harness
}

// defaultTTLBackends is how many backends RunDefaultTTL runs at once: the
// lanes mostly wait out TTLs, but each backend starts its own servers per
// lane, which a 2-core host cannot start all together.
const defaultTTLBackends = 2

// RunDefaultTTL runs the default-TTL lanes (defaultTTLLanes) on every
// backend, defaultTTLBackends at a time, as subtests named
// Backend.Name/<lane's scenarios joined by +>/<scenario>@<TTL>, and
// writes each backend's results as rows "<scenario>@<TTL>" of its column
// of the report (in <name>.default-ttl.json). The scenarios are judged as
// in Run, against the same expectations.
func RunDefaultTTL(t *testing.T, backends ...Backend) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, defaultTTLBackends)
	for _, b := range backends {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			t.Run(b.Name, func(t *testing.T) { runDefaultTTL(t, b.New) })
		})
	}
	wg.Wait()
}

func runDefaultTTL(t *testing.T, newHarness func(t *testing.T) Harness) {
	harness := func(t *testing.T) *Harness {
		h := newHarness(t)
		h.TTL = distlock.DefaultTTL
		return &h
	}
	first := harness(t)
	g := probeGuarantees(t, first)
	rep := &Report{Backend: first.Name, Short: testing.Short(), file: first.Name + ".default-ttl"}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for lane, ids := range defaultTTLLanes {
		scs := make([]scenario, len(ids))
		runs := false
		for i, id := range ids {
			scs[i] = catalogueScenario(id)
			if k := scs[i].expect(g, first).kind; k != "n/a" && k != "not run" {
				runs = true
			}
		}
		wg.Go(func() {
			t.Run(strings.Join(ids, "+"), func(t *testing.T) {
				h := first
				if lane > 0 && runs { // the first lane has the first servers
					h = harness(t)
				}
				for _, sc := range scs {
					id := sc.id + "@" + ttlLabel(h.ttl())
					t.Run(id, func(t *testing.T) {
						res := runScenario(t, h, g, sc)
						res.Scenario = id
						t.Logf("%s %s: expected %s, observed %s: %s (%s)", id, sc.title, res.Expected, res.Observed, res.Verdict, oneLine(res.Detail))
						if res.Verdict == Bug {
							t.Errorf("%s %s (%s): BUG: %s", id, sc.title, sc.property, res.Detail)
						}
						mu.Lock()
						rep.add(res)
						mu.Unlock()
					})
				}
			})
		})
	}
	wg.Wait()
	if err := rep.write(ReportDir()); err != nil {
		t.Errorf("writing the report: %v", err)
	}
}

// ttlLabel is how a TTL appears in a row's name: "30s", "1m30s".
func ttlLabel(d time.Duration) string { return d.Round(time.Second).String() }

// catalogueScenario returns the catalogue's scenario id; it panics on an
// id the catalogue lacks (a mistake in defaultTTLLanes).
func catalogueScenario(id string) scenario {
	for _, sc := range catalogue {
		if sc.id == id {
			return sc
		}
	}
	panic("conformance: no scenario " + id)
}
