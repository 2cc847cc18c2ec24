package conformance

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/migrate"
)

// MigrationPair names the two topologies of one migration run: the
// fleet leaves From's backend for To's. Both harnesses need URL (the
// scenarios' clients are worker processes) and Majority (the servers a
// fault freezes).
type MigrationPair struct {
	From, To Backend
}

// migScenario is one entry of the migration catalogue
// (docs/conformance.md, "Migration scenarios").
type migScenario struct {
	id, title, property string
	expect              expectation
	run                 func(m *migEnv) observation
}

// RunMigration runs the migration scenarios on each pair, one pair at a
// time (at most two topologies run at once), as subtests named
// "<from>-><to>/<scenario>", and writes each pair's results to
// migrate.<from>-<to>.json, a column of the matrix's migration table. A
// BUG verdict fails the test.
func RunMigration(t *testing.T, pairs ...MigrationPair) {
	for _, p := range pairs {
		t.Run(p.From.Name+"->"+p.To.Name, func(t *testing.T) { runMigration(t, p) })
	}
}

func runMigration(t *testing.T, p MigrationPair) {
	from, to := p.From.New(t), p.To.New(t)
	if from.URL == nil || to.URL == nil {
		t.Fatalf("%s and %s: the migration scenarios need worker processes (Harness.URL)", from.Name, to.Name)
	}
	name := from.Name + "->" + to.Name
	h := &Harness{Name: name, TTL: max(from.ttl(), to.ttl())}
	h.Servers = append(append(h.Servers, from.Servers...), to.Servers...)
	toMajority := make([]int, len(to.Majority))
	for i, s := range to.Majority {
		toMajority[i] = len(from.Servers) + s
	}
	rep := &Report{Backend: name, Short: testing.Short(), Migration: true, file: "migrate." + from.Name + "-" + to.Name}
	for _, sc := range migrationCatalogue {
		t.Run(sc.id, func(t *testing.T) {
			e := newEnv(t, h, distlock.Guarantees{}, sc.id)
			m := &migEnv{env: e, from: &from, to: &to, fromMajority: from.Majority, toMajority: toMajority, pairs: &pairResource{}}
			res := Result{Backend: name, Scenario: sc.id, Title: sc.title, Property: sc.property, Expected: sc.expect.kind, Reason: sc.expect.reason}
			start := time.Now()
			obs := sc.run(m)
			res.Seconds = time.Since(start).Seconds()
			judge(&res, sc.expect, obs)
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

// migEnv is one migration scenario's world: the env of a harness whose
// servers are the old backend's then the new one's, plus the fenced pair
// register.
type migEnv struct {
	*env
	from, to                 *Harness
	fromMajority, toMajority []int // indexes in env.h.Servers
	pairs                    *pairResource
}

// worker starts a worker process that opens a migrate Locker in phase ph
// over the two harnesses' URLs for client.
func (m *migEnv) worker(ph migrate.Phase, client string) *process {
	m.t.Helper()
	m.nextID++
	p := startProcess(m.t, m.nextID, migrateURL(m.from.URL(client), m.to.URL(client), ph), m.hist)
	m.clients = append(m.clients, p)
	return p
}

// warm opens the worker's connections on a key of its own, so that
// set-up is not counted as contention or acquisition latency. Its lease
// lasts 5 TTLs: in phase both, the new backend's connection set-up must
// fit in the old lease's validity (the bound of the second wait), which a
// loaded host can stretch past one short TTL.
func (m *migEnv) warm(p *process) {
	m.t.Helper()
	key := fmt.Sprintf("%s/warm%d", m.key, p.ID())
	if _, err := p.Acquire(withTimeout(m.env, 20*m.ttl), key, acquireReq{TTL: 5 * m.ttl}); err != nil {
		m.t.Fatalf("worker %d: warm-up acquire: %v", p.ID(), err)
	}
	if err := p.Release(m.ctx); err != nil {
		m.t.Fatalf("worker %d: warm-up release: %v", p.ID(), err)
	}
}

// migrateURL is the migrate:// URL of phase ph over from and to.
func migrateURL(from, to string, ph migrate.Phase) string {
	return "migrate://?from=" + url.QueryEscape(from) + "&to=" + url.QueryEscape(to) + "&phase=" + ph.String()
}

// pairSection runs one critical section on the unfenced register and the
// fenced pair register: read, sleep d, write back unless the holder
// learned its lease was lost meanwhile.
func (m *migEnv) pairSection(p *process, g grant, d time.Duration) {
	pv, rv := m.plain.read(), m.pairs.read()
	sleepCtx(m.ctx, d)
	if lost, _ := p.Lost(); lost {
		return
	}
	m.plain.write(p.ID(), g.Fence, pv)
	m.pairs.write(p.ID(), p.Pair(), rv)
}
