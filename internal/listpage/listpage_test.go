package listpage

import (
	"fmt"
	"slices"
	"sort"
	"testing"
)

func TestCollector(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cursor string
		keep   int
		offer  []string
		want   []string
	}{
		{"duplicates kept once", "", 3, []string{"b", "a", "b", "a"}, []string{"a", "b"}},
		{"duplicates when full", "", 2, []string{"c", "a", "c", "b", "a", "b"}, []string{"a", "b"}},
		{"at or before cursor ignored", "m", 5, []string{"a", "m", "z", "m\x00", "l"}, []string{"m\x00", "z"}},
		{"empty name ignored", "", 5, []string{"", "x"}, []string{"x"}},
		{"fewer than keep", "", 4, []string{"c", "a"}, []string{"a", "c"}},
		{"exactly keep", "", 3, []string{"c", "a", "b"}, []string{"a", "b", "c"}},
		{"keep+1 drops largest", "", 3, []string{"d", "c", "a", "b"}, []string{"a", "b", "c"}},
		{"bytewise order", "", 3, []string{"b", "B", "a.b", "a"}, []string{"B", "a", "a.b"}},
		{"keep zero", "", 0, []string{"a"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCollector(tc.cursor, tc.keep)
			for _, n := range tc.offer {
				c.Offer(n)
			}
			if got := c.Names(); !slices.Equal(got, tc.want) {
				t.Errorf("Names() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCollectorMatchesSort checks the Collector against sorting every
// distinct name after the cursor and keeping the first ones.
func TestCollectorMatchesSort(t *testing.T) {
	var all []string
	for i := range 500 {
		all = append(all, fmt.Sprintf("k%03d", (i*7919)%311)) // with repeats
	}
	for _, keep := range []int{1, 2, 10, 311, 400} {
		c := NewCollector("k100", keep)
		for _, n := range all {
			c.Offer(n)
		}
		set := map[string]bool{}
		for _, n := range all {
			if n > "k100" {
				set[n] = true
			}
		}
		var want []string
		for n := range set {
			want = append(want, n)
		}
		sort.Strings(want)
		want = want[:min(keep, len(want))]
		if got := c.Names(); !slices.Equal(got, want) {
			t.Errorf("keep %d: Names() = %q, want %q", keep, got, want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		name     string
		names    []string
		limit    int
		wantPage []string
		wantNext string
	}{
		{"empty", nil, 2, nil, ""},
		{"fewer than limit", []string{"a"}, 2, []string{"a"}, ""},
		{"exactly limit", []string{"a", "b"}, 2, []string{"a", "b"}, ""},
		{"limit+1", []string{"a", "b", "c"}, 2, []string{"a", "b"}, "b"},
		{"limit zero", []string{"a"}, 0, []string{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page, next := Cut(tc.names, tc.limit)
			if !slices.Equal(page, tc.wantPage) || next != tc.wantNext {
				t.Errorf("Cut(%q, %d) = %q, %q; want %q, %q", tc.names, tc.limit, page, next, tc.wantPage, tc.wantNext)
			}
		})
	}
}

func Example() {
	const limit = 2
	c := NewCollector("b", limit+1) // the page after cursor "b"
	for _, name := range []string{"e", "a", "c", "b", "d", "c", "f"} {
		c.Offer(name)
	}
	page, next := Cut(c.Names(), limit)
	fmt.Println(page, next)
	// Output: [c d] d
}

func TestMatchPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"":          "*",
		"jobs/":     "jobs/*",
		`a*b?c[d]\`: `a\*b\?c\[d\]\\*`,
	} {
		if got := MatchPrefix(in); got != want {
			t.Errorf("MatchPrefix(%q) = %q, want %q", in, got, want)
		}
	}
}
