package all_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/distlock/distlock"
	_ "github.com/distlock/distlock/all"
)

// backendURLs are opened without I/O to read each backend's Guarantees.
var backendURLs = []string{"mem://guarantees-doc", "redis://127.0.0.1:1/0", "redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4,127.0.0.1:5", "etcd://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "postgres://u@127.0.0.1:1/db?sslmode=disable", "zk://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// guaranteesTable renders the README table from the backends themselves.
func guaranteesTable(t *testing.T) string {
	var gs []distlock.Guarantees
	for _, u := range backendURLs {
		l, err := distlock.Open(context.Background(), u)
		if err != nil {
			t.Fatalf("open %s: %v", u, err)
		}
		gs = append(gs, l.Guarantees())
		_ = l.Close()
	}
	rows := []struct {
		name string
		val  func(distlock.Guarantees) string
	}{
		{"safety independent of clocks and pauses", func(g distlock.Guarantees) string { return yes(g.ClockIndependentSafety) }},
		{"server clock jumps cannot end or prolong a lease", func(g distlock.Guarantees) string { return yes(g.ServerClockSafety) }},
		{"fence", func(g distlock.Guarantees) string { return g.Fence.String() }},
		{"fence scope", func(g distlock.Guarantees) string { return g.FenceScope }},
		{"servers that may fail", func(g distlock.Guarantees) string { return fmt.Sprint(g.ToleratedFailures) }},
		{"safe under failover", func(g distlock.Guarantees) string { return yes(g.FailoverSafe) }},
		{"survives server restart", func(g distlock.Guarantees) string { return yes(g.SurvivesRestart) }},
		{"FIFO waiting", func(g distlock.Guarantees) string { return yes(g.FIFO) }},
		{"push wake-up", func(g distlock.Guarantees) string { return yes(g.PushWakeup) }},
		{"lost-lease notification", func(g distlock.Guarantees) string { return yes(g.LostNotification) }},
		{"freed when the holder crashes", func(g distlock.Guarantees) string { return yes(g.ReleasedOnCrash) }},
		{"waiters queue under an expiring session", func(g distlock.Guarantees) string { return yes(g.WaiterSessions) }},
		{"clients in several processes", func(g distlock.Guarantees) string { return yes(g.CrossProcess) }},
	}
	var sb strings.Builder
	sb.WriteString("| guarantee |")
	for _, g := range gs {
		sb.WriteString(" " + g.Backend + " |")
	}
	sb.WriteString("\n| --- |" + strings.Repeat(" --- |", len(gs)) + "\n")
	for _, r := range rows {
		sb.WriteString("| " + r.name + " |")
		for _, g := range gs {
			sb.WriteString(" " + r.val(g) + " |")
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

const begin, end = "<!-- guarantees:begin -->\n", "<!-- guarantees:end -->"

// TestREADMEGuaranteesTable keeps README's table equal to what the
// backends return. DISTLOCK_UPDATE_README=1 rewrites it.
func TestREADMEGuaranteesTable(t *testing.T) {
	const path = "../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i, j := strings.Index(readme, begin), strings.Index(readme, end)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the %q ... %q markers", begin, end)
	}
	want := guaranteesTable(t)
	if got := readme[i+len(begin) : j]; got != want {
		if os.Getenv("DISTLOCK_UPDATE_README") != "" {
			readme = readme[:i+len(begin)] + want + readme[j:]
			if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatalf("README guarantee table is stale; run DISTLOCK_UPDATE_README=1 go test ./all\nwant:\n%s", want)
	}
}

// TestReadmeSize: README.md is the user's first page and stays at most
// 12 KB; detail goes to docs/.
func TestReadmeSize(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 12000 {
		t.Fatalf("README.md is %d bytes, more than 12 KB: move detail to docs/", len(b))
	}
}
