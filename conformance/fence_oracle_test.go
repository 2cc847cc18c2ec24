package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/memlock"
)

func grantOp(client int, key string, fence uint64, call, ret int64) Op {
	return Op{Client: client, Key: key, Kind: OpAcquire, Outcome: OutcomeOK, Fence: fence, Call: call, Return: ret}
}

// TestCheckFences: the oracle finds a fence that goes back between
// successive holders and a fence handed out twice (even to overlapping
// holders, whom order cannot judge), and lets go of FenceMonotonic, but
// not FenceDurable, once a server lost its state.
func TestCheckFences(t *testing.T) {
	seq := []Op{grantOp(1, "k", 5, 0, 10), {Client: 1, Key: "k", Kind: OpRelease, Outcome: OutcomeOK, Call: 11, Return: 12},
		grantOp(2, "k", 7, 20, 30), grantOp(3, "other", 1, 20, 30)}
	back := []Op{grantOp(1, "k", 5, 0, 10), grantOp(2, "k", 4, 20, 30)}
	reused := []Op{grantOp(1, "k", 5, 0, 30), grantOp(2, "k", 5, 10, 20)} // overlapping: any order fits
	zero := []Op{grantOp(1, "k", 0, 0, 10)}
	for _, c := range []struct {
		name    string
		ops     []Op
		kind    distlock.FenceKind
		lostAt  int64
		ok      bool
		checked bool
		wantIn  string
	}{
		{"increasing", seq, distlock.FenceMonotonic, 0, true, true, "increasing"},
		{"backwards", back, distlock.FenceMonotonic, 0, false, true, "NOT linearizable"},
		{"backwards durable after a restart", back, distlock.FenceDurable, 15, false, true, "NOT linearizable"},
		{"backwards monotonic after a restart between them", back, distlock.FenceMonotonic, 15, true, true, "up to the first state loss"},
		{"backwards monotonic before a restart", back, distlock.FenceMonotonic, 35, false, true, "NOT linearizable"},
		{"monotonic, restart before any grant", back, distlock.FenceMonotonic, 5, true, false, "not checked"},
		{"reused", reused, distlock.FenceMonotonic, 0, false, true, "handed out twice"},
		{"reused, no order promised", reused, distlock.FenceNone, 0, false, true, "handed out twice"},
		{"backwards, no order promised", back, distlock.FenceNone, 0, true, true, "unique"},
		{"zero", zero, distlock.FenceDurable, 0, false, true, "fence 0"},
	} {
		v := CheckFences(c.ops, c.kind, c.lostAt, time.Second)
		if v.OK != c.ok || v.Checked != c.checked || !strings.Contains(v.Detail, c.wantIn) {
			t.Errorf("%s: %+v, want OK %v, checked %v, detail containing %q", c.name, v, c.ok, c.checked, c.wantIn)
		}
	}
}

// reusedFenceLocker hands every lease of a key the same fence.
type reusedFenceLocker struct{ *memlock.Locker }

func (l reusedFenceLocker) Acquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	ls, err := l.Locker.Acquire(ctx, key, opts...)
	if err != nil {
		return nil, err
	}
	return fixedFence{ls}, nil
}

func (l reusedFenceLocker) TryAcquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	ls, err := l.Locker.TryAcquire(ctx, key, opts...)
	if err != nil {
		return nil, err
	}
	return fixedFence{ls}, nil
}

type fixedFence struct{ distlock.Lease }

func (fixedFence) Fence() uint64 { return 7 }

// TestFenceOracleBitesEveryScenario: scenarios that never look at fences
// themselves (S03, S06) are judged a BUG on lockers whose fences go back
// or repeat, and kept on the correct locker; a failover that loses state
// excuses FenceMonotonic fences.
func TestFenceOracleBitesEveryScenario(t *testing.T) {
	space := memlock.New(nil)
	reuse := Harness{Name: "selftest-fence-reuse", TTL: 300 * time.Millisecond,
		NewLocker: func(context.Context, string) (distlock.Locker, error) {
			return reusedFenceLocker{space.NewHandle()}, nil
		}}
	regress := brokenHarness("fence-regression")
	for _, c := range []struct {
		h      Harness
		id     string
		wantIn string
	}{{regress, "S06", "NOT linearizable"}, {regress, "S03", "NOT linearizable"}, {reuse, "S06", "handed out twice"}} {
		l, _ := c.h.NewLocker(context.Background(), "probe")
		res := runScenario(t, &c.h, l.Guarantees(), scenarioByID(t, c.id))
		if res.Verdict != Bug || !strings.Contains(res.Detail, "fence oracle") || !strings.Contains(res.Detail, c.wantIn) {
			t.Errorf("%s on %s: verdict %q (%s), want BUG from the fence oracle", c.id, c.h.Name, res.Verdict, res.Detail)
			continue
		}
		t.Logf("%s on %s caught: %s", c.id, c.h.Name, oneLine(res.Detail))
	}
	good := Harness{Name: "selftest-fence-good", TTL: time.Second,
		NewLocker: func(context.Context, string) (distlock.Locker, error) { return space.NewHandle(), nil }}
	for _, id := range []string{"S03", "S06"} {
		if res := runScenario(t, &good, space.Guarantees(), scenarioByID(t, id)); res.Verdict != Kept || !strings.Contains(res.Detail, "fence oracle") {
			t.Errorf("%s on the correct locker: %s (%s)", id, res.Verdict, res.Detail)
		}
	}
	failover := scenario{id: "SX", title: "failover", property: "FENCE", expect: always,
		run: func(e *env) observation {
			_ = e.h.Failover(e.ctx)
			c := e.local("a")
			for range 3 {
				if _, err := c.Acquire(e.ctx, e.key, acquireReq{TTL: e.ttl}); err != nil {
					e.t.Fatal(err)
				}
				_ = c.Release(e.ctx)
			}
			return heldObs("failed over")
		}}
	regress.Failover = func(context.Context) error { return nil }
	l, _ := regress.NewLocker(context.Background(), "probe")
	if res := runScenario(t, &regress, l.Guarantees(), failover); res.Verdict != Kept || !strings.Contains(res.Detail, "not checked") {
		t.Errorf("fences going back across a failover on FenceMonotonic: %s (%s), want kept, not checked", res.Verdict, res.Detail)
	}
}
