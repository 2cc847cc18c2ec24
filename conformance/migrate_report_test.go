package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportMigrationTable: a migration pair's results form a table of
// their own after the backends' table, one column per pair, and do not
// add a column to the backends' table; their reasons are listed.
func TestReportMigrationTable(t *testing.T) {
	dir := t.TempDir()
	backend := &Report{Backend: "X", Results: []Result{
		{Scenario: "S01", Title: "one", Verdict: Kept, Expected: "holds", Observed: "held"},
	}}
	pair := &Report{Backend: "X->Y", Migration: true, file: "migrate.X-Y", Results: []Result{
		{Scenario: "M4", Title: "four", Verdict: BrokenAsDocumented, Expected: "breaks", Observed: "broke", Reason: "no shared lock"},
		{Scenario: "M1", Title: "one", Verdict: Kept, Expected: "holds", Observed: "held", Detail: "run-specific"},
	}}
	for _, r := range []*Report{pair, backend} {
		if err := r.write(dir); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "matrix.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := string(b)
	for _, want := range []string{
		"\n| # | scenario | property | X |\n",
		"\n## Migration\n",
		"\n| # | scenario | property | X->Y |\n",
		"| M1 | one |  | holds / held → **kept** |",
		"- M4 broken as documented: no shared lock\n",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("matrix.md lacks %q:\n%s", want, m)
		}
	}
	if i, j := strings.Index(m, "| M1 |"), strings.Index(m, "| M4 |"); i < 0 || j < i || i < strings.Index(m, "## Migration") {
		t.Errorf("migration rows missing, out of order, or outside the migration table:\n%s", m)
	}
	js, err := os.ReadFile(filepath.Join(dir, "migrate.X-Y.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"Migration": true`) || strings.Contains(string(js), "run-specific") {
		t.Errorf("tracked JSON must mark the pair and hold only stable fields:\n%s", js)
	}
}
