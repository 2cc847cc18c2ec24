package fencing_test

import (
	"errors"
	"testing"

	"github.com/distlock/distlock/fencing"
)

// TestPairAdmitsBySide: each side present is checked against that side's
// highest only; a side that is 0 is not checked; the zero pair is stale.
func TestPairAdmitsBySide(t *testing.T) {
	var g fencing.PairGuard
	steps := []struct {
		p  fencing.Pair
		ok bool
	}{
		{fencing.Pair{From: 5}, true},
		{fencing.Pair{From: 5}, true},          // the same holder again
		{fencing.Pair{From: 4}, false},         // an earlier old-backend holder
		{fencing.Pair{From: 6, To: 100}, true}, // phase both
		{fencing.Pair{From: 5, To: 200}, false},
		{fencing.Pair{To: 99}, false}, // an earlier new-backend holder
		{fencing.Pair{To: 101}, true}, // phase to: the old side is not checked
		{fencing.Pair{From: 7, To: 100}, false},
		{fencing.Pair{}, false},
	}
	for i, s := range steps {
		err := g.Admit("k", s.p)
		if (err == nil) != s.ok {
			t.Fatalf("step %d: Admit(%v) = %v, want ok=%v (highest %v)", i, s.p, err, s.ok, g.Highest("k"))
		}
		var se *fencing.StalePairError
		if err != nil && (!errors.Is(err, fencing.ErrStaleFence) || !errors.As(err, &se) || se.Pair != s.p) {
			t.Fatalf("step %d: error %v does not carry the pair or match ErrStaleFence", i, err)
		}
	}
	if h := g.Highest("k"); h != (fencing.Pair{From: 6, To: 101}) {
		t.Fatalf("highest %v", h)
	}
	if h := g.Highest("other"); h != (fencing.Pair{}) {
		t.Fatalf("another key's highest %v", h)
	}
}

// TestPairRegisterSeed: a register switched to pairs starts from the
// highest single fence it had accepted, so an old-backend holder from
// before the switch stays rejected.
func TestPairRegisterSeed(t *testing.T) {
	var r fencing.PairRegister[string]
	r.Seed(10)
	if err := r.Write(fencing.Pair{From: 9}, "stale"); !errors.Is(err, fencing.ErrStaleFence) {
		t.Fatalf("a fence below the seed was admitted: %v", err)
	}
	if err := r.Write(fencing.Pair{From: 10, To: 3}, "a"); err != nil {
		t.Fatal(err)
	}
	r.Seed(2) // never lowers a side
	if err := r.Update(fencing.Pair{From: 9}, func(string) string { return "b" }); err == nil {
		t.Fatal("Seed lowered the old side")
	}
	v, h := r.Read()
	if v != "a" || h != (fencing.Pair{From: 10, To: 3}) {
		t.Fatalf("Read = %q, %v", v, h)
	}
	var g fencing.PairGuard
	g.Seed("k", 4)
	if err := g.Admit("k", fencing.Pair{From: 3}); err == nil {
		t.Fatal("PairGuard.Seed did not raise the old side")
	}
}

func TestPairString(t *testing.T) {
	for p, want := range map[fencing.Pair]string{{From: 1}: "from=1", {To: 2}: "to=2", {From: 1, To: 2}: "from=1,to=2"} {
		if got := p.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", p, got, want)
		}
	}
}
