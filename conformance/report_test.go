package conformance

import (
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
