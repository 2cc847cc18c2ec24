package migrate

import (
	"fmt"

	"github.com/distlock/distlock"
)

// Guarantees reports what the Locker keeps in its phase:
//
//   - PhaseFrom and PhaseShadow: the old backend's guarantees (the shadow
//     lock on the new backend gives nothing);
//   - PhaseTo: the new backend's;
//   - PhaseBoth: a promise about exclusion holds if either backend makes
//     it, since a second holder needs both locks (ClockIndependentSafety,
//     ServerClockSafety, FailoverSafe, LostNotification: the holder hears
//     of the first loss, before anyone can hold both); a promise about
//     availability or waiting needs both backends (ToleratedFailures is
//     the smaller, SurvivesRestart, FIFO, PushWakeup, ReleasedOnCrash and
//     WaiterSessions need both). Fence and FenceScope are the old
//     backend's: Lease.Fence is its fence; the new backend's is in
//     Fences.
//
// Backend is "migrate(<from>-><to>,<phase>)".
func (l *Locker) Guarantees() distlock.Guarantees {
	gf, gt := l.from.Guarantees(), l.to.Guarantees()
	g := combine(gf, gt, l.opts.Phase)
	g.Backend = fmt.Sprintf("migrate(%s->%s,%v)", gf.Backend, gt.Backend, l.opts.Phase)
	return g
}

// combine derives the guarantees of phase p from the two backends'.
func combine(gf, gt distlock.Guarantees, p Phase) distlock.Guarantees {
	switch p {
	case PhaseTo:
		return gt
	case PhaseBoth:
		return distlock.Guarantees{
			ClockIndependentSafety: gf.ClockIndependentSafety || gt.ClockIndependentSafety,
			ServerClockSafety:      gf.ServerClockSafety || gt.ServerClockSafety,
			Fence:                  gf.Fence,
			FenceScope:             gf.FenceScope,
			ToleratedFailures:      min(gf.ToleratedFailures, gt.ToleratedFailures),
			FailoverSafe:           gf.FailoverSafe || gt.FailoverSafe,
			SurvivesRestart:        gf.SurvivesRestart && gt.SurvivesRestart,
			FIFO:                   gf.FIFO && gt.FIFO,
			PushWakeup:             gf.PushWakeup && gt.PushWakeup,
			LostNotification:       gf.LostNotification || gt.LostNotification,
			ReleasedOnCrash:        gf.ReleasedOnCrash && gt.ReleasedOnCrash,
			WaiterSessions:         gf.WaiterSessions && gt.WaiterSessions,
			CrossProcess:           gf.CrossProcess && gt.CrossProcess,
		}
	default: // PhaseFrom, PhaseShadow
		return gf
	}
}
