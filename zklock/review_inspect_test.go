package zklock_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
)

// TestReviewForceReleaseSparesNextHolder: ForceRelease promises that "a
// holder that released the key between the read and the delete is not
// followed by a second delete, so the next holder is never evicted by the
// same call". Its read is not one snapshot: it lists the lock nodes, then
// reads them one by one and takes the first still there as the holder. A
// holder that releases after the listing is skipped, and the next holder
// (woken by that release) is the node deleted.
func TestReviewForceReleaseSparesNextHolder(t *testing.T) {
	e := startEnsemble(t)
	key := locktest.UniqueKey(t)
	h, w, op, obs := e.locker(t, "review-h", nil), e.locker(t, "review-w", nil),
		e.locker(t, "review-op", nil), e.locker(t, "review-obs", nil)
	locktest.MustInspect(t, op, key) // the operator's session is up

	held := mustAcquire(t, h, key)
	next := make(chan distlock.Lease, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ls, err := w.Acquire(ctx, key)
		if err != nil {
			t.Errorf("waiter's Acquire: %v", err)
		}
		next <- ls
	}()
	locktest.Eventually(t, 5*time.Second, "the waiter is not queued", func() bool {
		return locktest.MustInspect(t, obs, key).Waiters == 1
	})

	// A slow operator link (500 ms each way): the listing reaches the
	// server at about 1.5 s, the read of the holder's node at 2.5 s.
	const lat = 500 * time.Millisecond
	for _, p := range e.Links("review-op") {
		p.SetLatency(lat)
	}
	defer func() {
		for _, p := range e.Links("review-op") {
			p.Heal()
		}
	}()
	forced := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := op.ForceRelease(ctx, key)
		forced <- err
	}()
	// The holder releases on its own between the listing and the read.
	time.Sleep(4*lat - time.Since(start))
	mustRelease(t, held)
	ls := <-next
	if ls == nil {
		t.FailNow()
	}
	if err := <-forced; err != nil {
		t.Fatalf("ForceRelease: %v", err)
	}
	info := locktest.MustInspect(t, obs, key)
	if info.Holder != distlock.HolderID(ls.Token()) || ls.Err() != nil {
		t.Fatalf("ForceRelease evicted the next holder, which took the key after the one it read released it: "+
			"Inspect = %+v, next holder's Err = %v", info, ls.Err())
	}
	mustRelease(t, ls)
}
