package migrate_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/memlock"
	"github.com/distlock/distlock/migrate"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fleet is two in-process lock spaces, the old backend's and the new
// one's, that the clients of a test share as a fleet shares two servers.
type fleet struct {
	t        *testing.T
	from, to *memlock.Locker // one handle on each space, for inspection
}

func newFleet(t *testing.T) *fleet {
	f := &fleet{t: t, from: memlock.New(nil), to: memlock.New(nil)}
	t.Cleanup(func() { _ = f.from.Close(); _ = f.to.Close() })
	return f
}

// client opens a migrate Locker in phase p on the fleet's spaces.
func (f *fleet) client(p migrate.Phase) *migrate.Locker {
	return f.clientOpts(migrate.Options{Phase: p})
}

func (f *fleet) clientOpts(o migrate.Options) *migrate.Locker {
	f.t.Helper()
	l, err := migrate.New(f.from.NewHandle(), f.to.NewHandle(), o)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = l.Close() })
	return l
}

// heldOn reports whether key is held on a backend, by trying it.
func heldOn(t *testing.T, l distlock.Locker, key string) bool {
	t.Helper()
	ls, err := l.TryAcquire(t.Context(), key)
	if err != nil {
		return true
	}
	if err := ls.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	return false
}

var phases = []migrate.Phase{migrate.PhaseFrom, migrate.PhaseShadow, migrate.PhaseBoth, migrate.PhaseTo}
