package etcdlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/etcdlock"
)

// TestPredecessorGoneBeforeWatch: the predecessor's deletion commits
// after the waiter's read found it but before the waiter's watch starts.
// The watch starts after the deletion and never hears of it, so the
// waiter must notice from its check of the predecessor; the poll (set to a
// minute here) must not be what frees it. A second case changes an
// unrelated key instead: the predecessor stays, and the waiter must keep
// waiting for it and then get the lock as soon as it is released.
func TestPredecessorGoneBeforeWatch(t *testing.T) {
	c := startCluster(t)
	opts := &etcdlock.Options{PollInterval: time.Minute}
	holder, waiter := c.locker(t, "h", opts), c.locker(t, "w", opts)
	admin := c.admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, tc := range []struct {
		name        string
		deletePred  bool // else write an unrelated key
		releaseLate bool // release the holder once the waiter watches
	}{
		{name: "deleted", deletePred: true},
		{name: "still there", releaseLate: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := uniqueKey(t)
			held := mustAcquire(t, holder, key)
			var once sync.Once
			watching := make(chan struct{})
			etcdlock.SetBeforeWatch(func(pred string) {
				once.Do(func() {
					defer close(watching)
					var err error
					if tc.deletePred {
						_, err = admin.Delete(ctx, pred)
					} else {
						_, err = admin.Put(ctx, key+"-unrelated", "x")
					}
					if err != nil {
						t.Errorf("before the watch: %v", err)
					}
				})
			})
			defer etcdlock.SetBeforeWatch(nil)
			type result struct {
				took time.Duration
				err  error
			}
			got := make(chan result, 1)
			start := time.Now()
			go func() {
				ls, err := waiter.Acquire(ctx, key)
				if err == nil {
					defer func() { _ = ls.Release(context.Background()) }()
				}
				got <- result{time.Since(start), err}
			}()
			<-watching
			if tc.releaseLate {
				select {
				case r := <-got:
					t.Fatalf("the waiter returned (%v, after %v) while the holder still held the key", r.err, r.took)
				case <-time.After(300 * time.Millisecond):
				}
				mustRelease(t, held)
			}
			select {
			case r := <-got:
				if r.err != nil {
					t.Fatalf("Acquire: %v", r.err)
				}
				t.Logf("acquired after %v", r.took)
			case <-time.After(20 * time.Second):
				t.Fatal("the waiter is still waiting 20 s after its predecessor went (poll 1 min)")
			}
			if !tc.releaseLate {
				_ = held.Release(context.Background()) // its entry is gone; the lease reports that
			}
		})
	}
}
