package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Verdict compares a scenario's observed outcome with the expected one.
type Verdict string

const (
	// Kept: the property was expected to hold and held.
	Kept Verdict = "kept"
	// BrokenAsDocumented: the property is not promised (Guarantees) and
	// the suite made it break, demonstrating the limitation.
	BrokenAsDocumented Verdict = "broken as documented"
	// Bug: a promised property broke. A Bug fails the test run.
	Bug Verdict = "BUG"
	// Inconclusive: the fault did not bite (a limitation did not show) or
	// the history checker timed out.
	Inconclusive Verdict = "inconclusive"
	// Measured: the scenario reports numbers, not a pass/fail property.
	Measured Verdict = "measured"
	// NotApplicable: the backend or harness lacks what the scenario needs.
	NotApplicable Verdict = "n/a"
	// NotRun: the suite cannot run the scenario in its environment (the
	// Reason says why).
	NotRun Verdict = "not run"
)

// Result is one scenario run against one backend.
//
// The fields up to Reason depend only on the catalogue, the backend's
// Guarantees and the harness, and on the verdict: they are what the
// tracked report (report/<backend>.json, matrix.md) holds. Detail,
// Metrics and Seconds differ from run to run and are written only to the
// run files under report/runs/, which git ignores.
type Result struct {
	Backend  string
	Scenario string
	Title    string
	Property string
	Spec     string `json:",omitempty"` // a note where the expectation differs from the specification table's OK cell
	Expected string // "holds", "breaks", "measure", "n/a" or "not run"
	Observed string // "held", "broke", "inconclusive", "measured" or "-"
	Verdict  Verdict
	// Reason is why the expectation is what it is: the limitation a
	// "breaks" expectation rests on, what an n/a scenario needs, or the
	// specification problem behind a BUG found before running.
	Reason  string             `json:",omitempty"`
	Detail  string             `json:",omitempty"` // what the run saw
	Metrics map[string]float64 `json:",omitempty"`
	Seconds float64            `json:",omitempty"`
}

// stable returns res without its run-specific fields.
func (res Result) stable() Result {
	res.Detail, res.Metrics, res.Seconds = "", nil, 0
	return res
}

// Report is the results of one backend's run, or of one part of it (the
// default-TTL rows are written apart, and merged into the backend's column
// of the matrix).
type Report struct {
	Backend string
	Written time.Time `json:",omitzero"`  // set in the run file only
	Short   bool      `json:",omitempty"` // run with -short; in the run file only
	// Migration marks a pair of backends (RunMigration), shown in the
	// matrix's migration table rather than as a backend column.
	Migration bool `json:",omitempty"`
	// Helpers marks the helper scenarios of one backend (RunHelpers),
	// shown in the matrix's helpers table rather than in its column of
	// the backends' table.
	Helpers bool `json:",omitempty"`
	Results []Result

	file string // the JSON file's name without ".json"; "" for Backend
}

// add records a result; Run calls it from one goroutine at a time.
func (r *Report) add(res Result) { r.Results = append(r.Results, res) }

// stable returns the report as tracked: no time or mode, results sorted
// and stripped of their run-specific fields.
func (r *Report) stable() Report {
	s := Report{Backend: r.Backend, Migration: r.Migration, Helpers: r.Helpers, file: r.file}
	for _, res := range r.Results {
		s.Results = append(s.Results, res.stable())
	}
	sortResults(s.Results)
	return s
}

// ReportDir is where reports are written: $DISTLOCK_REPORT_DIR, else the
// report/ folder at the module root.
func ReportDir() string {
	if d := os.Getenv("DISTLOCK_REPORT_DIR"); d != "" {
		return d
	}
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/distlock/distlock\n") {
			return filepath.Join(d, "report")
		}
		if filepath.Dir(d) == d {
			return filepath.Join(dir, "report")
		}
	}
}

// runDir is the folder of the run files, inside the report directory.
const runDir = "runs"

// reportWrites serialises report writes: each rewrites the matrix from
// every JSON file, which another write may be in the middle of.
var reportWrites sync.Mutex

// write saves this backend's tracked JSON (stable fields only) and its
// run file (every field, with the time of writing), then regenerates
// matrix.md from every tracked JSON in dir and runs/details.md from every
// run file. A run whose verdicts match the last one leaves the tracked
// files byte for byte as they were.
func (r *Report) write(dir string) error {
	reportWrites.Lock()
	defer reportWrites.Unlock()
	runs := filepath.Join(dir, runDir)
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(runs, ".gitignore"), []byte("*\n"), 0o644); err != nil {
		return err
	}
	file := r.file
	if file == "" {
		file = r.Backend
	}
	sortResults(r.Results)
	r.Written = time.Now().UTC().Truncate(time.Second)
	if err := writeJSON(filepath.Join(runs, file+".json"), r); err != nil {
		return err
	}
	s := r.stable()
	if err := writeJSON(filepath.Join(dir, file+".json"), &s); err != nil {
		return err
	}
	reps, err := readReports(dir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "matrix.md"), renderMatrix(reps), 0o644); err != nil {
		return err
	}
	if reps, err = readReports(runs); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(runs, "details.md"), renderDetails(reps), 0o644)
}

func writeJSON(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// readReports reads every report JSON in dir, merging the parts of one
// backend, in backend order.
func readReports(dir string) ([]Report, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var reps []Report
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var r Report
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		reps = mergeReport(reps, r)
	}
	sort.Slice(reps, func(i, j int) bool { return reps[i].Backend < reps[j].Backend })
	return reps, nil
}

func sortResults(rs []Result) {
	sort.SliceStable(rs, func(i, j int) bool { return scenarioLess(rs[i].Scenario, rs[j].Scenario) })
}

func scenarioOrder(id string) int {
	var n int
	fmt.Sscanf(id, "S%d", &n)
	return n
}

// scenarioLess orders scenarios by number, and a scenario's variants
// ("S11@30s") after it.
func scenarioLess(a, b string) bool {
	if oa, ob := scenarioOrder(a), scenarioOrder(b); oa != ob {
		return oa < ob
	}
	return a < b
}

// renderMatrix renders matrix.md from the tracked reports: scenario x
// backend, expected and observed, then the reasons behind the
// expectations. It reads only stable fields, so the same verdicts give the
// same bytes.
func renderMatrix(reps []Report) []byte {
	var sb strings.Builder
	sb.WriteString("# Conformance matrix\n\nGenerated by the conformance suite (`conformance.Run`); do not edit. ")
	sb.WriteString("Scenarios, properties and verdicts are defined in docs/conformance.md. ")
	sb.WriteString("Each cell: expected / observed → verdict. A BUG fails the test run. ")
	sb.WriteString("What each run saw (details, durations, metrics) is in report/runs/, which git ignores.\n")
	var backends, pairs, helpers []Report
	for _, r := range reps {
		switch {
		case r.Migration:
			pairs = append(pairs, r)
		case r.Helpers:
			helpers = append(helpers, r)
		default:
			backends = append(backends, r)
		}
	}
	writeTable(&sb, backends)
	if len(pairs) > 0 {
		sb.WriteString("\n## Migration\n\nThe migration scenarios (`conformance.RunMigration`), one column per pair of topologies: the fleet moves from the first to the second through package migrate's phases.\n")
		writeTable(&sb, pairs)
	}
	if len(helpers) > 0 {
		sb.WriteString("\n## Helpers\n\nThe helper scenarios (`conformance.RunHelpers`), one column per topology: `distlock.Do`, package leader, package multilock and inspection (`distlock.Inspector`) over the backend.\n")
		writeTable(&sb, helpers)
	}
	sb.WriteString("\n## Reasons\n\nWhy a scenario is expected to break or is not applicable, and where an expectation differs from the catalogue.\n\n")
	for _, r := range slices.Concat(backends, pairs, helpers) {
		if !slices.ContainsFunc(r.Results, func(res Result) bool { return res.Reason != "" || res.Spec != "" }) {
			continue
		}
		name := r.Backend
		if r.Helpers {
			name += " (helpers)"
		}
		fmt.Fprintf(&sb, "### %s\n\n", name)
		for _, res := range r.Results {
			if res.Reason == "" && res.Spec == "" {
				continue
			}
			fmt.Fprintf(&sb, "- %s %s: %s", res.Scenario, res.Verdict, res.Reason)
			if res.Spec != "" {
				fmt.Fprintf(&sb, " [%s]", res.Spec)
			}
			sb.WriteString("\n")
		}
		sb.WriteString("\n")
	}
	return []byte(sb.String())
}

// writeTable writes the scenario x backend table.
func writeTable(sb *strings.Builder, reps []Report) {
	type row struct{ id, title, prop string }
	rows := map[string]row{}
	cells := map[string]map[string]Result{}
	for _, r := range reps {
		for _, res := range r.Results {
			rows[res.Scenario] = row{res.Scenario, res.Title, res.Property}
			if cells[res.Scenario] == nil {
				cells[res.Scenario] = map[string]Result{}
			}
			cells[res.Scenario][r.Backend] = res
		}
	}
	ids := make([]string, 0, len(rows))
	for id := range rows {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return scenarioLess(ids[i], ids[j]) })
	sb.WriteString("\n| # | scenario | property |")
	for _, r := range reps {
		sb.WriteString(" " + r.Backend + " |")
	}
	sb.WriteString("\n| --- | --- | --- |" + strings.Repeat(" --- |", len(reps)) + "\n")
	for _, id := range ids {
		rw := rows[id]
		fmt.Fprintf(sb, "| %s | %s | %s |", rw.id, rw.title, rw.prop)
		for _, r := range reps {
			res, ok := cells[id][r.Backend]
			switch {
			case !ok:
				sb.WriteString(" not run |")
			case res.Verdict == NotApplicable || res.Verdict == NotRun:
				sb.WriteString(" " + string(res.Verdict) + " |")
			default:
				fmt.Fprintf(sb, " %s / %s → **%s** |", res.Expected, res.Observed, res.Verdict)
			}
		}
		sb.WriteString("\n")
	}
}

// renderDetails renders runs/details.md from the run files: per backend,
// each scenario's verdict, time of the run, duration, detail and metrics.
func renderDetails(reps []Report) []byte {
	var sb strings.Builder
	sb.WriteString("# Conformance run details\n\nGenerated by the conformance suite from report/runs/*.json; not tracked.\n\n")
	for _, r := range reps {
		mode := "full"
		if r.Short {
			mode = "-short"
		}
		name := r.Backend
		if r.Helpers {
			name += " (helpers)"
		}
		fmt.Fprintf(&sb, "## %s (%s run, %s)\n\n", name, mode, r.Written.Format(time.RFC3339))
		for _, res := range r.Results {
			fmt.Fprintf(&sb, "- %s %s (%.1fs): %s", res.Scenario, res.Verdict, res.Seconds, oneLine(res.Detail))
			keys := make([]string, 0, len(res.Metrics))
			for k := range res.Metrics {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(&sb, " %s=%.3g", k, res.Metrics[k])
			}
			sb.WriteString("\n")
		}
		sb.WriteString("\n")
	}
	return []byte(sb.String())
}

// mergeReport adds r to reps, into the report of the same backend and
// family (backend scenarios, migration, helpers) if there is one (its
// results after the others', its time the later).
func mergeReport(reps []Report, r Report) []Report {
	for i := range reps {
		if reps[i].Backend == r.Backend && reps[i].Migration == r.Migration && reps[i].Helpers == r.Helpers {
			reps[i].Results = append(reps[i].Results, r.Results...)
			sortResults(reps[i].Results)
			if r.Written.After(reps[i].Written) {
				reps[i].Written = r.Written
			}
			return reps
		}
	}
	return append(reps, r)
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", "; ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}
