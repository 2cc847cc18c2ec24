package redissingle_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/redissingle"
)

// TestReviewForceReleaseLostReplyEvictsNextHolder: ForceRelease's script
// runs detached with a context that is never
// cancelled (lifecycle.Detach), so when its reply is lost go-redis
// retries it after its read timeout (MaxRetries, 3 by default) on
// another pooled connection, long after ForceRelease returned
// ErrUnavailable. The retry must not evict whoever took the key since:
// one operator call never evicts a later holder.
func TestReviewForceReleaseLostReplyEvictsNextHolder(t *testing.T) {
	s := startRedis(t)
	key := uniqueKey(t)
	c := newClient(t, s.node.Link("review-op").Addr())
	op, err := redissingle.New(c, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = op.Close() })
	// Several connections in the operator's pool, as any busy client has.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.BLPop(context.Background(), time.Second, "review-warm:"+key).Err()
		}()
	}
	wg.Wait()
	// The script in the server's cache, so that EVALSHA runs it.
	if _, err := op.ForceRelease(ctx5(t), key); err != nil {
		t.Fatalf("ForceRelease of a free key: %v", err)
	}

	a, d, e := s.locker(t, "review-a", nil), s.locker(t, "review-d", nil), s.locker(t, "review-e", nil)
	opts := []distlock.Option{distlock.WithTTL(30 * time.Second), distlock.WithoutAutoExtend()}
	mustAcquire(t, a, key, opts...)

	// The read is answered; the script's reply is lost.
	link := s.node.Link("review-op")
	defer redissingle.SetForceHook(link.DropReplies)()
	defer link.Heal()
	forced := make(chan error, 1)
	go func() {
		_, err := op.ForceRelease(context.Background(), key)
		forced <- err
	}()

	// The first run freed the key: the next holder takes it.
	var next distlock.Lease
	eventually(t, 5*time.Second, "the key was not freed", func() bool {
		ls, err := d.TryAcquire(ctx5(t), key, opts...)
		next = ls
		return err == nil
	})
	if err := <-forced; !errors.Is(err, distlock.ErrUnavailable) {
		t.Fatalf("ForceRelease with its reply lost = %v, want ErrUnavailable", err)
	}

	// The next holder must keep the key for as long as its lease is valid.
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		info := locktest.MustInspect(t, d, key)
		if info.Holder != distlock.HolderID(next.Token()) && next.Err() == nil {
			ls, err := e.TryAcquire(ctx5(t), key, opts...)
			t.Fatalf("one ForceRelease, whose reply was lost, evicted the next holder too "+
				"(its lease valid for %v more): Inspect = %+v; another TryAcquire = %v, %v",
				time.Until(next.ValidUntil()).Round(time.Second), info, ls != nil, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mustRelease(t, next)
}
