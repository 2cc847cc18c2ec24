package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportPartsMergeIntoOneColumn: a backend's default-TTL rows, written
// to a file of their own, join its column of the matrix, each after the
// scenario it varies; the two writes leave each other's rows alone.
func TestReportPartsMergeIntoOneColumn(t *testing.T) {
	dir := t.TempDir()
	main := &Report{Backend: "X", Results: []Result{
		{Scenario: "S12", Title: "twelve", Verdict: Kept, Expected: "holds", Observed: "held"},
		{Scenario: "S11", Title: "eleven", Verdict: Kept, Expected: "holds", Observed: "held"},
	}}
	part := &Report{Backend: "X", file: "X.default-ttl", Results: []Result{
		{Scenario: "S11@30s", Title: "eleven", Verdict: Bug, Expected: "holds", Observed: "broke"},
	}}
	for _, r := range []*Report{part, main} {
		if err := r.write(dir); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 2 {
		t.Fatalf("JSON files %v, want X.json and X.default-ttl.json", files)
	}
	b, err := os.ReadFile(filepath.Join(dir, "matrix.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := string(b)
	if !strings.Contains(m, "\n| # | scenario | property | X |\n") {
		t.Fatalf("want one column for backend X:\n%s", m)
	}
	rows := []string{"| S11 | eleven", "| S11@30s | eleven", "| S12 | twelve"}
	last := -1
	for _, row := range rows {
		i := strings.Index(m, row)
		if i <= last {
			t.Fatalf("row %q missing or out of order (want %v):\n%s", row, rows, m)
		}
		last = i
	}
	if !strings.Contains(m, "holds / broke → **BUG**") {
		t.Fatalf("the default-TTL row's verdict is missing:\n%s", m)
	}
}

// TestReportWriteIsDeterministic: writing the same verdicts twice, with
// different durations, details, metrics, mode (-short) and result order,
// gives the same
// bytes in the tracked JSON and matrix.md; the run-specific fields land in
// runs/, which carries its own .gitignore.
func TestReportWriteIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	tracked := func() map[string]string {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		out := map[string]string{}
		for _, f := range files {
			if filepath.Base(f) == runDir {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out[filepath.Base(f)] = string(b)
		}
		return out
	}
	var first map[string]string
	for run, seconds := range []float64{0.3, 7.9} {
		results := []Result{
			{Scenario: "S25", Title: "herd", Expected: "measure", Observed: "measured", Verdict: Measured,
				Detail: fmt.Sprintf("%d hand-offs out of order", run), Metrics: map[string]float64{"b": seconds, "a": 1}, Seconds: seconds},
			{Scenario: "S08", Title: "paused", Expected: "breaks", Observed: "broke", Verdict: BrokenAsDocumented,
				Reason: "TTL-based", Detail: fmt.Sprintf("TTL-based. key conformance/%d overlapped", run), Seconds: seconds},
			{Scenario: "S07", Title: "killed", Expected: "n/a", Observed: "-", Verdict: NotApplicable, Reason: "needs processes", Detail: "needs processes"},
		}
		if run == 1 {
			results[0], results[2] = results[2], results[0]
		}
		if err := (&Report{Backend: "X", Short: run == 1, Results: results}).write(dir); err != nil {
			t.Fatal(err)
		}
		got := tracked()
		if first == nil {
			first = got
			continue
		}
		for name, b := range first {
			if got[name] != b {
				t.Errorf("%s changed between two writes of the same verdicts:\n%s\n---\n%s", name, b, got[name])
			}
		}
	}
	for _, s := range []string{"overlapped", "Seconds", "Written", "Short", "-short", "7.9"} {
		if strings.Contains(first["X.json"]+first["matrix.md"], s) {
			t.Errorf("tracked report holds the run-specific %q:\n%s%s", s, first["X.json"], first["matrix.md"])
		}
	}
	details, err := os.ReadFile(filepath.Join(dir, runDir, "details.md"))
	if err != nil || !strings.Contains(string(details), "key conformance/1 overlapped") || !strings.Contains(string(details), " a=1 b=7.9") {
		t.Errorf("runs/details.md lacks the last run's details (%v):\n%s", err, details)
	}
	if b, err := os.ReadFile(filepath.Join(dir, runDir, ".gitignore")); err != nil || string(b) != "*\n" {
		t.Errorf("runs/.gitignore = %q, %v; want \"*\\n\"", b, err)
	}
}
