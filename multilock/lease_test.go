package multilock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/multilock"
)

// TestRevokedPart: revoking one key ends the lease (Done, Err matching
// ErrLeaseLost and naming the key) and frees the other keys at once;
// Release then reports the loss and leaves Err as it was.
func TestRevokedPart(t *testing.T) {
	mine, other := newMem(t)
	ml := mustAcquire(t, mine, []string{"a", "b", "c"})
	if err := ml.Err(); err != nil {
		t.Fatalf("Err while held: %v", err)
	}
	if !mine.Revoke("b") {
		t.Fatal("b was not held")
	}
	wantDone(t, ml)
	lost := ml.Err()
	locktest.WantErr(t, lost, distlock.ErrLeaseLost)
	if !strings.Contains(lost.Error(), `key "b" lost`) {
		t.Fatalf("Err %q does not name key b", lost)
	}
	locktest.Eventually(t, 5*time.Second, "a and c released", func() bool {
		return !held(t, other, "a") && !held(t, other, "c")
	})
	err := ml.Release(context.Background())
	locktest.WantErr(t, err, distlock.ErrLeaseLost)
	if ml.Err() != lost {
		t.Fatalf("Err after Release: %v, want %v", ml.Err(), lost)
	}
	if again := ml.Release(context.Background()); again != err {
		t.Fatalf("second Release: %v, want the first call's %v", again, err)
	}
	if !ml.ValidUntil().Before(time.Now()) {
		t.Fatalf("ValidUntil %v after the loss is in the future", ml.ValidUntil())
	}
}

// TestExpiredPart: a part whose TTL runs out ends the lease, and the
// watcher exits without a Release (TestMain checks).
func TestExpiredPart(t *testing.T) {
	mine, other := newMem(t)
	ml := mustAcquire(t, mine, []string{"a", "b"}, distlock.WithTTL(50*time.Millisecond))
	if left := time.Until(ml.ValidUntil()); left <= 0 || left > 50*time.Millisecond {
		t.Fatalf("ValidUntil in %v, want within the TTL", left)
	}
	wantDone(t, ml)
	locktest.WantErr(t, ml.Err(), distlock.ErrLeaseLost)
	locktest.Eventually(t, 5*time.Second, "a and b free", func() bool {
		return !held(t, other, "a") && !held(t, other, "b")
	})
	locktest.WantErr(t, ml.Extend(context.Background(), time.Second), distlock.ErrLeaseLost)
}

// TestExtend extends every part; ValidUntil is the earliest part's.
func TestExtend(t *testing.T) {
	mine, _ := newMem(t)
	ml := mustAcquire(t, mine, []string{"a", "b", "c"}, distlock.WithTTL(200*time.Millisecond))
	defer mustRelease(t, ml)
	locktest.WantErr(t, ml.Extend(context.Background(), 0), distlock.ErrInvalidArgument)
	if err := ml.Extend(context.Background(), 10*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	earliest := ml.ValidUntil()
	if time.Until(earliest) < 5*time.Second {
		t.Fatalf("ValidUntil in %v after extending by 10 s", time.Until(earliest))
	}
	for _, p := range ml.Parts() {
		if p.ValidUntil().Before(earliest) {
			t.Fatalf("part %s valid until %v, before the lease's %v", p.Key(), p.ValidUntil(), earliest)
		}
	}
	time.Sleep(300 * time.Millisecond) // past the first TTL
	if err := ml.Err(); err != nil {
		t.Fatalf("lost after Extend: %v", err)
	}
}

// TestExtendLostPart: Extend meeting a revoked part returns ErrLeaseLost,
// ends the lease and frees the rest.
func TestExtendLostPart(t *testing.T) {
	mine, other := newMem(t)
	ml := mustAcquire(t, mine, []string{"a", "b", "c"})
	mine.Revoke("c")
	err := ml.Extend(context.Background(), time.Second)
	locktest.WantErr(t, err, distlock.ErrLeaseLost)
	wantDone(t, ml)
	locktest.Eventually(t, 5*time.Second, "a and b released", func() bool {
		return !held(t, other, "a") && !held(t, other, "b")
	})
	locktest.WantErr(t, ml.Release(context.Background()), distlock.ErrLeaseLost)
}

// TestRelease frees every key; Done closes, Err matches ErrReleased and a
// second Release returns the first call's nil.
func TestRelease(t *testing.T) {
	mine, other := newMem(t)
	ml := mustAcquire(t, mine, []string{"x", "y"}, distlock.WithAutoExtend(0), distlock.WithTTL(time.Second))
	locktest.ReleaseTwice(t, ml)
	wantFree(t, other, "x", "y")
	locktest.WantErr(t, ml.Extend(context.Background(), time.Second), distlock.ErrReleased)
}

// TestPartReleasedDirectly: releasing a part behind the Lease's back ends
// the Lease as lost, not as released.
func TestPartReleasedDirectly(t *testing.T) {
	mine, other := newMem(t)
	ml := mustAcquire(t, mine, []string{"a", "b"})
	locktest.MustRelease(t, ml.Parts()[1])
	wantDone(t, ml)
	err := ml.Err()
	locktest.WantErr(t, err, distlock.ErrLeaseLost)
	if !strings.Contains(err.Error(), `key "b"`) {
		t.Fatalf("Err %q does not name key b", err)
	}
	locktest.Eventually(t, 5*time.Second, "a released", func() bool { return !held(t, other, "a") })
	_ = ml.Release(context.Background())
	var _ distlock.Lease = (*multilock.Lease)(nil)
}
