package leader_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/leader"
	"github.com/distlock/distlock/memlock"
)

// lockerOnly hides every method but those of distlock.Locker, as a
// backend without an Inspector has.
type lockerOnly struct{ distlock.Locker }

func TestObserveFollowsFailover(t *testing.T) {
	a := memlock.New(nil)
	b, watcher := a.NewHandle(), a.NewHandle()
	defer a.Close()
	defer b.Close()
	defer watcher.Close()
	key := locktest.UniqueKey(t)
	ctx := context.Background()

	if got, err := leader.Observe(ctx, watcher, key); err != nil || got.Elected {
		t.Fatalf("before any campaign: %+v, %v; want no leader", got, err)
	}
	lockers := []distlock.Locker{a, b}
	startGroup(t, lockers, key, func(i int) leader.Work {
		return func(ctx context.Context, _ leader.Term) error { <-ctx.Done(); return nil }
	}, leader.WithResignDelay(time.Hour), leader.WithLockOptions(distlock.WithTTL(time.Second)))
	var first leader.Leader
	locktest.Eventually(t, 5*time.Second, "no leader observed", func() bool {
		var err error
		first, err = leader.Observe(ctx, watcher, key)
		return err == nil && first.Elected
	})
	if first.Fence == 0 || first.Holder == "" || first.TTL <= 0 {
		t.Fatalf("observed %+v, want a fence, a holder and a TTL", first)
	}
	// The leader is revoked; the other candidate takes over and Observe
	// reports the new term.
	if _, err := distlock.ForceRelease(ctx, watcher, key); err != nil {
		t.Fatal(err)
	}
	locktest.Eventually(t, 5*time.Second, "no new term observed", func() bool {
		got, err := leader.Observe(ctx, watcher, key)
		return err == nil && got.Elected && got.Fence > first.Fence && got.Holder != first.Holder
	})
}

func TestObserveIdentity(t *testing.T) {
	a := memlock.New(nil)
	watcher := a.NewHandle()
	defer a.Close()
	defer watcher.Close()
	key := locktest.UniqueKey(t)
	startGroup(t, []distlock.Locker{a}, key, func(int) leader.Work {
		return func(ctx context.Context, _ leader.Term) error { <-ctx.Done(); return nil }
	}, leader.WithIdentity("10.0.0.7:8080"))
	locktest.Eventually(t, 5*time.Second, "identity not observed", func() bool {
		got, err := leader.Observe(context.Background(), watcher, key)
		return err == nil && got.Identity == "10.0.0.7:8080"
	})
}

func TestObserveErrors(t *testing.T) {
	l := memlock.New(nil)
	defer l.Close()
	_, err := leader.Observe(context.Background(), lockerOnly{l}, "k")
	locktest.WantErr(t, err, distlock.ErrNotSupported)
	_, err = leader.Observe(context.Background(), l, "")
	locktest.WantErr(t, err, distlock.ErrInvalidArgument)
	_, err = leader.NewCandidate(l, "k", func(context.Context, leader.Term) error { return nil },
		leader.WithIdentity(strings.Repeat("x", distlock.MaxLabelLen+1)))
	locktest.WantErr(t, err, distlock.ErrInvalidArgument)
}
