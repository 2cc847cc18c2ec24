package conformance_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/distlock/distlock/conformance"
	_ "github.com/distlock/distlock/memlock" // registers mem://
)

// TestURLHarness runs the suite through URLHarness alone, as a user would
// against a deployment of their own: the scenarios that need no fault hook
// run and are kept (mem:// is one process-wide space per name), the fault
// scenarios are n/a, and the report lands in DISTLOCK_REPORT_DIR.
func TestURLHarness(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DISTLOCK_REPORT_DIR", dir)
	h := conformance.URLHarness("mem-url", "mem://conformance-url-harness")
	if h.Servers != nil || h.Links != nil || h.Revoke == nil {
		t.Fatal("URLHarness: want Revoke and no fault hooks")
	}
	conformance.Run(t, h)

	raw, err := os.ReadFile(filepath.Join(dir, "mem-url.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep conformance.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]conformance.Verdict{}
	kept := 0
	for _, r := range rep.Results {
		verdicts[r.Scenario] = r.Verdict
		if r.Verdict == conformance.Kept {
			kept++
		}
	}
	if verdicts["S01"] != conformance.Kept || verdicts["S34"] != conformance.Kept {
		t.Errorf("S01 %q, S34 %q: want kept", verdicts["S01"], verdicts["S34"])
	}
	if v := verdicts["S16"]; v != "n/a" {
		t.Errorf("S16 (server restart) %q: want n/a without Servers", v)
	}
	if kept < 6 {
		t.Errorf("%d scenarios kept, want at least 6: %v", kept, verdicts)
	}
}
