package migrate_test

import (
	"testing"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/migrate"
)

// stated is a Locker that only states guarantees; New and Guarantees
// read them and make no call.
type stated struct {
	distlock.Locker
	g distlock.Guarantees
}

func (s stated) Guarantees() distlock.Guarantees { return s.g }

// TestGuaranteesPerPhase: from and shadow keep the old backend's
// promises, to the new one's; both keeps an exclusion promise if either
// side makes it and an availability or waiting promise only if both do.
func TestGuaranteesPerPhase(t *testing.T) {
	redis := distlock.Guarantees{Backend: "redis", Fence: distlock.FenceMonotonic, FenceScope: "server",
		PushWakeup: true, LostNotification: true, CrossProcess: true}
	etcd := distlock.Guarantees{Backend: "etcd", ClockIndependentSafety: true, ServerClockSafety: true,
		Fence: distlock.FenceDurable, FenceScope: "cluster", ToleratedFailures: 1, FailoverSafe: true,
		SurvivesRestart: true, FIFO: true, PushWakeup: true, LostNotification: true, ReleasedOnCrash: true,
		WaiterSessions: true, CrossProcess: true}
	want := map[migrate.Phase]distlock.Guarantees{
		migrate.PhaseFrom:   redis,
		migrate.PhaseShadow: redis,
		migrate.PhaseTo:     etcd,
		migrate.PhaseBoth: {ClockIndependentSafety: true, ServerClockSafety: true, Fence: distlock.FenceMonotonic,
			FenceScope: "server", FailoverSafe: true, PushWakeup: true, LostNotification: true, CrossProcess: true},
	}
	for p, w := range want {
		l, err := migrate.New(stated{g: redis}, stated{g: etcd}, migrate.Options{Phase: p})
		if err != nil {
			t.Fatal(err)
		}
		got := l.Guarantees()
		if got.Backend != "migrate(redis->etcd,"+p.String()+")" {
			t.Errorf("%v: Backend %q", p, got.Backend)
		}
		got.Backend, w.Backend = "", ""
		if got != w {
			t.Errorf("%v:\n got %+v\nwant %+v", p, got, w)
		}
	}
}
