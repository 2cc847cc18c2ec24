package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/distlock/distlock/migrate"
)

// migrationCatalogue is the migration scenario list (docs/conformance.md,
// "Migration scenarios").
var migrationCatalogue = []migScenario{
	{"M1", "fleet of phases from + shadow contends on one key", "ME FSAFE DF", holds(), fleetScenario(migrate.PhaseFrom, migrate.PhaseShadow)},
	{"M2", "fleet of phases shadow + both contends on one key", "ME FSAFE DF", holds(), fleetScenario(migrate.PhaseShadow, migrate.PhaseBoth)},
	{"M3", "fleet of phases both + to contends on one key", "ME FSAFE DF", holds(), fleetScenario(migrate.PhaseBoth, migrate.PhaseTo)},
	{"M4", "fleet of phases from + to (not adjacent) contends on one key", "ME", breaks("from and to share no lock: the phases are two steps apart"), m4},
	{"M5", "new backend frozen 3xTTL under an auto-extended both holder", "LN ME DF", holds(), func(m *migEnv) observation { return m.freeze(false) }},
	{"M6", "old backend frozen 3xTTL under an auto-extended both holder", "LN ME DF", holds(), func(m *migEnv) observation { return m.freeze(true) }},
	{"M7", "rolling deploy: 4 workers moved one by one from -> shadow -> both -> to", "ME FSAFE DF, latency", holds(), m7},
	{"M8", "both waiter under auto-extend while the new backend is frozen", "DF", holds(), m8},
}

// fleetWorkers and fleetSections size the fleets of M1-M4: per phase,
// workers that each make sections critical sections of fleetHold.
const (
	fleetWorkers  = 2
	fleetSections = 12
	fleetHold     = 5 * time.Millisecond
)

// fleetResult is what a fleet's workers saw.
type fleetResult struct {
	failed  int
	latency map[migrate.Phase][]time.Duration // acquisition latencies
}

// fleet starts n worker processes per phase, warms them, then lets each
// make sections critical sections of hold on the scenario's key at once.
func (m *migEnv) fleet(phases []migrate.Phase, n, sections int, hold time.Duration) fleetResult {
	type member struct {
		p  *process
		ph migrate.Phase
	}
	var ms []member
	for _, ph := range phases {
		for i := range n {
			p := m.worker(ph, fmt.Sprintf("%v%d", ph, i))
			m.warm(p)
			ms = append(ms, member{p, ph})
		}
	}
	res := fleetResult{latency: map[migrate.Phase][]time.Duration{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, w := range ms {
		wg.Go(func() {
			for range sections {
				ctx, cancel := context.WithTimeout(m.ctx, 20*m.ttl)
				g, err := w.p.Acquire(ctx, m.key, acquireReq{TTL: m.ttl, RetryMax: 20 * time.Millisecond})
				cancel()
				mu.Lock()
				if err != nil {
					res.failed++
				} else {
					res.latency[w.ph] = append(res.latency[w.ph], time.Duration(g.Ret-g.Call))
				}
				mu.Unlock()
				if err != nil {
					continue
				}
				m.pairSection(w.p, g, hold)
				_ = w.p.Release(m.ctx)
			}
		})
	}
	wg.Wait()
	return res
}

// fleetScenario is M1-M3: two adjacent phases contend; no overlap, no
// stale write let through, no write of a holder refused.
func fleetScenario(a, b migrate.Phase) func(m *migEnv) observation {
	return func(m *migEnv) observation {
		r := m.fleet([]migrate.Phase{a, b}, fleetWorkers, fleetSections, fleetHold)
		return m.judgeAdjacent(r.failed, r.latency)
	}
}

// judgeAdjacent checks a run of adjacent phases with all three oracles.
func (m *migEnv) judgeAdjacent(failed int, lat map[migrate.Phase][]time.Duration) observation {
	overlaps, hist := m.plain.lostUpdates(), CheckMutex(m.hist.Ops(), 20*time.Second, vizDir())
	writes, accepted, refused := m.pairs.stats()
	metrics := latencyMetrics(lat)
	metrics["overlaps"], metrics["stale_rejected"], metrics["stale_accepted"] = float64(len(overlaps)), float64(len(refused)), float64(len(accepted))
	metrics["failed"], metrics["writes"] = float64(failed), float64(writes)
	var problems []string
	if len(overlaps) > 0 {
		problems = append(problems, fmt.Sprintf("resource oracle: %d lost update(s), first: %s", len(overlaps), overlaps[0]))
	}
	if !hist.OK && !hist.Inconclusive {
		problems = append(problems, "history oracle (mutex model): "+hist.Detail+viz(hist))
	}
	if len(accepted) > 0 {
		problems = append(problems, fmt.Sprintf("pair register let %d stale write(s) through, first: %s", len(accepted), accepted[0]))
	}
	if len(refused) > 0 {
		problems = append(problems, fmt.Sprintf("pair register refused %d write(s) of holders, first: %s", len(refused), refused[0]))
	}
	if failed > 0 {
		problems = append(problems, fmt.Sprintf("DF: %d acquisition(s) failed", failed))
	}
	switch {
	case len(problems) > 0:
		return observation{detail: strings.Join(problems, "; "), metrics: metrics}
	case hist.Inconclusive:
		return observation{inconclusive: true, detail: "history check timed out", metrics: metrics}
	}
	return observation{held: true, metrics: metrics, detail: fmt.Sprintf(
		"no overlap: %d ops checked, %d pair-fenced writes accepted, none refused", hist.Ops, writes)}
}

// m4: the wrong pairing, from + to, with the fleets' workload made more
// overlap-prone (more workers, longer sections). It must break; a run
// that shows no overlap means the workload does not bite, which fails it.
func m4(m *migEnv) observation {
	r := m.fleet([]migrate.Phase{migrate.PhaseFrom, migrate.PhaseTo}, 3, 15, 10*time.Millisecond)
	overlaps := m.plain.lostUpdates()
	hist := CheckMutex(m.hist.Ops(), 5*time.Second, vizDir())
	writes, accepted, refused := m.pairs.stats()
	metrics := latencyMetrics(r.latency)
	metrics["overlaps"], metrics["stale_rejected"], metrics["stale_accepted"] = float64(len(overlaps)), float64(len(refused)), float64(len(accepted))
	metrics["writes"] = float64(writes)
	switch {
	case r.failed > 0:
		return unrelatedObs("DF: %d acquisition(s) failed", r.failed)
	case len(overlaps) == 0 && (hist.OK || hist.Inconclusive):
		return unrelatedObs("the from + to fleet showed no overlap: the workload does not bite")
	}
	detail := fmt.Sprintf("%d lost update(s) on the unfenced register, the pair register let %d stale write(s) through", len(overlaps), len(accepted))
	if len(overlaps) > 0 {
		detail += ", first: " + overlaps[0]
	}
	if !hist.OK && !hist.Inconclusive {
		detail += "; history oracle: " + hist.Detail
	}
	return observation{detail: detail, metrics: metrics}
}

// latencyMetrics gives p50 and p99 acquisition latency per phase, in ms.
func latencyMetrics(lat map[migrate.Phase][]time.Duration) map[string]float64 {
	out := map[string]float64{}
	for ph, ds := range lat {
		if len(ds) == 0 {
			continue
		}
		s := slices.Clone(ds)
		slices.Sort(s)
		pct := func(q float64) float64 { return float64(s[int(q*float64(len(s)-1))]) / 1e6 }
		out["p50_ms_"+ph.String()], out["p99_ms_"+ph.String()] = pct(0.5), pct(0.99)
		out["acquisitions_"+ph.String()] = float64(len(s))
	}
	return out
}
