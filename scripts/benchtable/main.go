// Command benchtable turns the output of the bench module's benchmarks
// (go test -bench, any -count) into the table of docs/benchmarks.md.
//
// It reads the benchmark output on standard input, keeps the ratio and
// count metrics (units such as ours/raw, ours/redsync, cmds/acq; not
// times, which depend on the machine and its load), takes the median of
// each over the -count repetitions, and replaces the lines between the
// markers "<!-- bench-table:begin -->" and "<!-- bench-table:end -->" of
// the file named by -doc with a Markdown table. -cmd is the command line
// printed above the table. Rows are ordered by benchmark and unit, so the
// same figures give the same bytes.
//
//	go run ./scripts/benchtable -doc docs/benchmarks.md -cmd "make bench-table" < bench.out
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

const (
	begin = "<!-- bench-table:begin -->"
	end   = "<!-- bench-table:end -->"
)

// kept selects the units of the table: a ratio of two implementations
// measured side by side (ours/raw, floor/redsync, ours/peer-k8; the
// migrate benchmarks' both/from+to, shadow/from, both/slower), or a
// per-operation count that does not depend on the machine's speed.
var kept = regexp.MustCompile(`^([a-z+-]+/(raw|raw\+nextval|bsm|peer|redsync|floor|etcd|zk|from|from-ctx|from\+to|seq|slower)(-k[0-9]+)?|cmds/acq|req/acq|keys/lock|leases/100locks|sessions/contender)$`)

// peers are the implementations ours is compared with, as they appear in
// sub-benchmark names (B2Handoff/bsm/k=8) and metric units (redsync-N5-us).
var peers = []string{"raw", "raw+nextval", "bsm", "peer", "redsync", "floor"}

// latency selects the units a derived ratio is computed for: times and
// rates that a benchmark reports per implementation.
var latency = regexp.MustCompile(`(^|-)(us|p50-us|p99-us|acq/s)$`)

// procs strips the GOMAXPROCS suffix go test adds to a benchmark's name.
var procs = regexp.MustCompile(`-[0-9]+$`)

func main() {
	doc := flag.String("doc", "docs/benchmarks.md", "the Markdown file holding the table markers")
	cmd := flag.String("cmd", "make bench-table", "the command shown above the table")
	flag.Parse()
	figures, failed, err := parse(os.Stdin)
	if err != nil {
		log.Fatal(err)
	}
	figures = derive(figures)
	if len(figures) == 0 {
		log.Fatal("benchtable: no ratio or count metrics in the input")
	}
	old, err := os.ReadFile(*doc)
	if err != nil {
		log.Fatal(err)
	}
	out, err := splice(old, render(figures, failed, *cmd))
	if err != nil {
		log.Fatalf("%s: %v", *doc, err)
	}
	if err := os.WriteFile(*doc, out, 0o644); err != nil {
		log.Fatal(err)
	}
}

// derive adds, for the benchmarks that report each implementation's
// latency or rate apart, ours over each peer, then drops everything but
// ratios and counts. Two forms are compared: sub-benchmarks whose names
// differ only in the implementation's segment (B2Handoff/ours/k=8 and
// B2Handoff/bsm/k=8: ours/bsm on B2Handoff/k=8), and units of one
// benchmark that differ only in their implementation prefix (ours-N5-us
// and redsync-N5-us: ours/redsync-N5-us). A ratio is computed from the
// medians of the two sides.
func derive(figures map[[2]string][]float64) map[[2]string][]float64 {
	out := map[[2]string][]float64{}
	derived := map[string]bool{} // benchmarks with ratios across sub-benchmarks
	for k, vs := range figures {
		name, unit := k[0], k[1]
		if kept.MatchString(unit) {
			out[k] = vs
		}
		if !latency.MatchString(unit) {
			continue
		}
		segs := strings.Split(name, "/")
		for i, seg := range segs {
			if seg != "ours" {
				continue
			}
			for _, p := range peers {
				other := append(append(append([]string(nil), segs[:i]...), p), segs[i+1:]...)
				if ov, ok := figures[[2]string{strings.Join(other, "/"), unit}]; ok {
					rest := append(append([]string(nil), segs[:i]...), segs[i+1:]...)
					out[[2]string{strings.Join(rest, "/"), "ours/" + p + " " + unit}] = []float64{median(vs) / median(ov)}
					derived[segs[0]] = true
				}
			}
		}
		if rest, ok := strings.CutPrefix(unit, "ours-"); ok {
			for _, p := range peers {
				if _, explicit := figures[[2]string{name, "ours/" + p}]; explicit {
					continue
				}
				if ov, ok := figures[[2]string{name, p + "-" + rest}]; ok {
					out[[2]string{name, "ours/" + p + " " + rest}] = []float64{median(vs) / median(ov)}
				}
			}
		}
	}
	// A "ratio" sub-benchmark computes its ratios from the last repetition
	// of its siblings only; where the siblings' medians gave ratios above,
	// it is left out.
	for k := range out {
		top, _, _ := strings.Cut(k[0], "/")
		if strings.HasSuffix(k[0], "/ratio") && derived[top] {
			delete(out, k)
		}
	}
	return out
}

// parse collects the ratio, count, latency and rate metrics of every
// benchmark line, keyed by benchmark name and unit, one value per
// repetition, and the names of the benchmarks that failed.
func parse(r io.Reader) (figures map[[2]string][]float64, failed []string, err error) {
	figures = map[[2]string][]float64{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "--- FAIL: Benchmark"); ok {
			name = procs.ReplaceAllString(name, "")
			if !seen[name] {
				seen[name] = true
				failed = append(failed, name)
			}
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := procs.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		for i := 2; i+1 < len(f); i += 2 {
			if !kept.MatchString(f[i+1]) && !latency.MatchString(f[i+1]) {
				continue
			}
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %s: %w", name, f[i+1], err)
			}
			k := [2]string{name, f[i+1]}
			figures[k] = append(figures[k], v)
		}
	}
	sort.Slice(failed, func(i, j int) bool { return naturalLess(failed[i], failed[j]) })
	return figures, failed, sc.Err()
}

// render writes the table: one row per benchmark and unit, the median of
// its repetitions; then the benchmarks that failed, if any.
func render(figures map[[2]string][]float64, failed []string, cmd string) string {
	keys := make([][2]string, 0, len(figures))
	for k := range figures {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return naturalLess(keys[i][0], keys[j][0])
		}
		return naturalLess(keys[i][1], keys[j][1])
	})
	var b strings.Builder
	fmt.Fprintf(&b, "Produced by `%s`. Each figure is the median over the repetitions; ", cmd)
	b.WriteString("a figure named \"ours/peer unit\" is the ratio of the two implementations' medians of that unit.\n\n")
	b.WriteString("| benchmark | figure | value |\n| --- | --- | --- |\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", k[0], k[1], format(median(figures[k])))
	}
	if len(failed) > 0 {
		b.WriteString("\nFailed in at least one repetition of the run that wrote this table (the figures of their passing repetitions are included): ")
		b.WriteString(strings.Join(failed, ", ") + ".\n")
	}
	return b.String()
}

func median(vs []float64) float64 {
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// format prints three significant digits.
func format(v float64) string {
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// splice replaces what lies between the markers with table.
func splice(doc []byte, table string) ([]byte, error) {
	i := bytes.Index(doc, []byte(begin))
	j := bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		return nil, fmt.Errorf("want the markers %q and %q, in that order", begin, end)
	}
	var out bytes.Buffer
	out.Write(doc[:i+len(begin)])
	out.WriteString("\n" + table)
	out.Write(doc[j:])
	return out.Bytes(), nil
}

// naturalLess orders strings with their digit runs compared as numbers,
// so that k=8 comes before k=64.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, _ := strconv.Atoi(a[:da])
			nb, _ := strconv.Atoi(b[:db])
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

// digits returns the length of the run of ASCII digits s starts with.
func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
