package migrate_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/migrate"
)

// TestAdjacentPhasesExclude: for every pair of phases, a holder in one
// and a TryAcquire in the other on the same key. Adjacent phases must
// refuse the second; from and to, which share no lock, both get it,
// which shows the check can fail. (shadow, to) is not asserted either
// way: the mirror may or may not be in place.
func TestAdjacentPhasesExclude(t *testing.T) {
	for _, p := range phases {
		for _, q := range phases {
			t.Run(fmt.Sprintf("%v-%v", p, q), func(t *testing.T) {
				f := newFleet(t)
				key := locktest.UniqueKey(t)
				a := locktest.MustAcquire(t, f.client(p), key)
				defer locktest.MustRelease(t, a)
				b, err := f.client(q).TryAcquire(t.Context(), key)
				switch {
				case migrate.Adjacent(p, q):
					locktest.WantErr(t, err, distlock.ErrNotAcquired)
				case p == migrate.PhaseFrom && q == migrate.PhaseTo || p == migrate.PhaseTo && q == migrate.PhaseFrom:
					if err != nil {
						t.Fatalf("from and to share no lock, yet the second was refused: %v", err)
					}
					locktest.MustRelease(t, b)
				case err == nil:
					locktest.MustRelease(t, b)
				}
			})
		}
	}
}

// TestPhaseLocksWhere: each phase takes the lock where it says, and
// releases it there.
func TestPhaseLocksWhere(t *testing.T) {
	for _, p := range []migrate.Phase{migrate.PhaseFrom, migrate.PhaseBoth, migrate.PhaseTo} {
		t.Run(p.String(), func(t *testing.T) {
			f := newFleet(t)
			key := locktest.UniqueKey(t)
			a := locktest.MustAcquire(t, f.client(p), key)
			wantFrom, wantTo := p != migrate.PhaseTo, p != migrate.PhaseFrom
			if got := heldOn(t, f.from, key); got != wantFrom {
				t.Errorf("old backend held = %v, want %v", got, wantFrom)
			}
			if got := heldOn(t, f.to, key); got != wantTo {
				t.Errorf("new backend held = %v, want %v", got, wantTo)
			}
			locktest.MustRelease(t, a)
			if heldOn(t, f.from, key) || heldOn(t, f.to, key) {
				t.Error("a backend still holds the key after Release")
			}
		})
	}
}

func TestAdjacent(t *testing.T) {
	want := map[[2]migrate.Phase]bool{}
	for i, p := range phases {
		for j, q := range phases {
			want[[2]migrate.Phase{p, q}] = i-j <= 1 && j-i <= 1
		}
	}
	for pq, w := range want {
		if got := migrate.Adjacent(pq[0], pq[1]); got != w {
			t.Errorf("Adjacent(%v, %v) = %v, want %v", pq[0], pq[1], got, w)
		}
	}
	if migrate.Adjacent(0, migrate.PhaseFrom) || migrate.Adjacent(migrate.PhaseTo, 5) {
		t.Error("an invalid phase is adjacent to something")
	}
}

func TestParsePhase(t *testing.T) {
	for _, p := range phases {
		got, err := migrate.ParsePhase(p.String())
		if err != nil || got != p {
			t.Errorf("ParsePhase(%q) = %v, %v", p.String(), got, err)
		}
	}
	if got, err := migrate.ParsePhase("BOTH"); err != nil || got != migrate.PhaseBoth {
		t.Errorf("ParsePhase(BOTH) = %v, %v", got, err)
	}
	_, err := migrate.ParsePhase("dual")
	if !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Errorf("ParsePhase(dual): %v, want ErrInvalidArgument", err)
	}
	if s := migrate.Phase(9).String(); s != "phase(9)" {
		t.Errorf("String of an invalid phase: %q", s)
	}
}
