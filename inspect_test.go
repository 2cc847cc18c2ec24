package distlock_test

import (
	"context"
	"strings"
	"testing"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/memlock"
)

// lockerOnly hides every method but those of distlock.Locker.
type lockerOnly struct{ distlock.Locker }

func TestInspectNotSupported(t *testing.T) {
	l := lockerOnly{memlock.New(nil)}
	defer l.Close()
	ctx := context.Background()
	_, err := distlock.Inspect(ctx, l, "k")
	locktest.WantErr(t, err, distlock.ErrNotSupported)
	if !strings.Contains(err.Error(), `"mem"`) || !strings.Contains(err.Error(), "inspect") {
		t.Fatalf("error %q does not name the operation and the backend", err)
	}
	_, err = distlock.List(ctx, l, "", distlock.Page{})
	locktest.WantErr(t, err, distlock.ErrNotSupported)
	_, err = distlock.ForceRelease(ctx, l, "k")
	locktest.WantErr(t, err, distlock.ErrNotSupported)
	_, err = distlock.Inspect(ctx, nil, "k")
	locktest.WantErr(t, err, distlock.ErrInvalidArgument)
}

func TestHolderIDIsStable(t *testing.T) {
	// Golden values (the first 16 hex digits of sha256sum): LockInfo.Holder must match across versions and
	// processes, so an operator can match a lease to its lock state.
	for token, want := range map[string]string{
		"":                                 "",
		"token":                            "3c469e9d6c5875d3",
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA": "22a48051594c1949",
	} {
		if got := distlock.HolderID(token); got != want {
			t.Errorf("HolderID(%q) = %q, want %q", token, got, want)
		}
	}
}

func TestPageLimit(t *testing.T) {
	for limit, want := range map[int]int{0: distlock.DefaultListLimit, 1: 1, distlock.MaxListLimit: distlock.MaxListLimit} {
		if got, err := (distlock.Page{Limit: limit}).LimitOrDefault(); err != nil || got != want {
			t.Errorf("Limit %d: got %d, %v; want %d", limit, got, err, want)
		}
	}
	for _, limit := range []int{-1, distlock.MaxListLimit + 1} {
		_, err := (distlock.Page{Limit: limit}).LimitOrDefault()
		locktest.WantErr(t, err, distlock.ErrInvalidArgument)
	}
}

func TestInspectThroughReentrant(t *testing.T) {
	inner := memlock.New(nil)
	defer inner.Close()
	l := distlock.Reentrant(inner)
	ctx := distlock.WithOwner(context.Background(), "job-1")
	ls := locktest.MustAcquire(t, l, "k")
	defer locktest.MustRelease(t, ls)
	info, err := distlock.Inspect(ctx, l, "k")
	if err != nil || !info.Held || info.Holder != distlock.HolderID(ls.Token()) {
		t.Fatalf("Inspect through Reentrant = %+v, %v", info, err)
	}
	_, err = distlock.Inspect(ctx, distlock.Reentrant(lockerOnly{inner}), "k")
	locktest.WantErr(t, err, distlock.ErrNotSupported)
}
