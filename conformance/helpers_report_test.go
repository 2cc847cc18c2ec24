package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportHelpersTable: a backend's helper results form a table of
// their own after the backends' table, one column per backend, and are
// not merged into the backend's column although they share its name;
// their tracked JSON marks them and holds only stable fields.
func TestReportHelpersTable(t *testing.T) {
	dir := t.TempDir()
	backend := &Report{Backend: "X", Results: []Result{
		{Scenario: "S01", Title: "one", Verdict: Kept, Expected: "holds", Observed: "held"},
	}}
	helpers := &Report{Backend: "X", Helpers: true, file: "helpers.X", Results: []Result{
		{Scenario: "H2", Title: "two", Verdict: NotApplicable, Expected: "n/a", Observed: "-", Reason: "needs a hook"},
		{Scenario: "H1", Title: "one", Verdict: Kept, Expected: "holds", Observed: "held", Detail: "run-specific"},
	}}
	for _, r := range []*Report{helpers, backend} {
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
		"\n| # | scenario | property | X |\n| --- | --- | --- | --- |\n| S01 |",
		"\n## Helpers\n",
		"| H1 | one |  | holds / held → **kept** |",
		"| H2 | two |  | n/a |",
		"### X (helpers)\n\n- H2 n/a: needs a hook\n",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("matrix.md lacks %q:\n%s", want, m)
		}
	}
	if i, j := strings.Index(m, "| H1 |"), strings.Index(m, "## Helpers"); j < 0 || i < j || strings.Count(m, "| H1 |") != 1 {
		t.Errorf("helper rows missing, repeated, or outside the helpers table:\n%s", m)
	}
	if strings.Contains(m, "### X\n") {
		t.Errorf("the backend X has no reasons, so no section of its own:\n%s", m)
	}
	js, err := os.ReadFile(filepath.Join(dir, "helpers.X.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"Helpers": true`) || strings.Contains(string(js), "run-specific") {
		t.Errorf("tracked JSON must mark the helpers and hold only stable fields:\n%s", js)
	}
}
