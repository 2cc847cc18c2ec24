package migrate_test

import (
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/migrate"
)

// TestShadowMirrors: a shadow lease mirrors itself on the new backend in
// the background and releases the mirror after the old lease; the stats
// and the callback see both calls.
func TestShadowMirrors(t *testing.T) {
	f := newFleet(t)
	var mu sync.Mutex
	var events []migrate.ShadowEvent
	l := f.clientOpts(migrate.Options{Phase: migrate.PhaseShadow, OnShadow: func(ev migrate.ShadowEvent) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}})
	key := locktest.UniqueKey(t)
	ls := locktest.MustAcquire(t, l, key)
	locktest.Eventually(t, 5*time.Second, "the mirror on the new backend", func() bool { return l.ShadowStats().Acquired == 1 })
	if !heldOn(t, f.to, key) {
		t.Fatal("the mirror was counted but the new backend's key is free")
	}
	if p, ok := migrate.Fences(ls); !ok || p.From != ls.Fence() || p.To != 0 {
		t.Fatalf("a shadow lease's fences are %v (%v), want the old backend's only", p, ok)
	}
	locktest.MustRelease(t, ls)
	locktest.Eventually(t, 5*time.Second, "the mirror released", func() bool { return l.ShadowStats().Released == 1 })
	if heldOn(t, f.to, key) {
		t.Fatal("the mirror is still held after its release was counted")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 || events[0].Op != migrate.ShadowAcquire || events[1].Op != migrate.ShadowRelease || events[0].Key != key {
		t.Fatalf("events %+v, want an acquire then a release of %q", events, key)
	}
}

// TestShadowNeverDelaysTheCaller: with the new backend's key held
// elsewhere (contention the old backend does not see), the shadow client
// still acquires at once on the old backend, and the contention is
// counted once the budget runs out.
func TestShadowNeverDelaysTheCaller(t *testing.T) {
	f := newFleet(t)
	key := locktest.UniqueKey(t)
	other := locktest.MustAcquire(t, f.to, key)
	defer locktest.MustRelease(t, other)
	l := f.clientOpts(migrate.Options{Phase: migrate.PhaseShadow, ShadowBudget: time.Hour})
	ls, err := l.TryAcquire(t.Context(), key)
	if err != nil {
		t.Fatalf("shadow TryAcquire failed on the new backend's contention: %v", err)
	}
	locktest.MustRelease(t, ls) // cancels the mirror's wait, which had an hour
	locktest.Eventually(t, 5*time.Second, "the abandoned mirror counted", func() bool { return l.ShadowStats().Abandoned == 1 })

	short := f.clientOpts(migrate.Options{Phase: migrate.PhaseShadow, ShadowBudget: 50 * time.Millisecond})
	ls = locktest.MustAcquire(t, short, key)
	defer locktest.MustRelease(t, ls)
	locktest.Eventually(t, 5*time.Second, "the contention counted", func() bool { return short.ShadowStats().Contended == 1 })
}

// TestShadowExtendAndFailures: Extend extends the mirror too; a mirror
// lost meanwhile is counted as lost, never reported to the caller.
func TestShadowExtendAndFailures(t *testing.T) {
	f := newFleet(t)
	l := f.client(migrate.PhaseShadow)
	key := locktest.UniqueKey(t)
	ls := locktest.MustAcquire(t, l, key, distlock.WithTTL(time.Second))
	locktest.Eventually(t, 5*time.Second, "the mirror", func() bool { return l.ShadowStats().Acquired == 1 })
	if err := ls.Extend(t.Context(), time.Minute); err != nil {
		t.Fatal(err)
	}
	locktest.Eventually(t, 5*time.Second, "the mirror extended", func() bool { return l.ShadowStats().Extended == 1 })
	f.to.Revoke(key)
	if err := ls.Release(t.Context()); err != nil {
		t.Fatalf("a lost mirror failed the caller's Release: %v", err)
	}
	locktest.Eventually(t, 5*time.Second, "the lost mirror counted", func() bool { return l.ShadowStats().Lost == 1 })
}
