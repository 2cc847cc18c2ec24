package etcdlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
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

// TestCutOffWhileWatchStarts (S26): the waiter is cut off from the cluster
// just as it starts watching its predecessor, so the member never confirms
// the watch and the client's Watch call waits for a stream that does not
// come back. The poll is set to a minute, so only the session's death can
// end that wait in time: Acquire returns ErrSessionExpired within about a
// TTL, not when the poll or Close comes.
func TestCutOffWhileWatchStarts(t *testing.T) {
	c := startCluster(t)
	holder := c.locker(t, "h", nil)
	waiter := c.locker(t, "waiter", &etcdlock.Options{PollInterval: time.Minute})
	key := uniqueKey(t)
	ttl := 2 * time.Second
	held := mustAcquire(t, holder, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Minute))
	defer mustRelease(t, held)
	heals := make(chan func(), 1)
	defer func() {
		select {
		case heal := <-heals:
			heal()
		default:
		}
	}()
	var once sync.Once
	etcdlock.SetBeforeWatch(func(string) { once.Do(func() { heals <- c.cut("waiter") }) })
	defer etcdlock.SetBeforeWatch(nil)
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ls, err := waiter.Acquire(ctx, key, distlock.WithTTL(ttl))
		if err == nil {
			_ = ls.Release(context.Background())
		}
		errc <- err
	}()
	select {
	case err := <-errc:
		wantErr(t, err, etcdlock.ErrSessionExpired, distlock.ErrUnavailable)
		t.Logf("the waiter returned %v after it started: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(4 * ttl):
		t.Errorf("the waiter cut off while its watch started still waits %v later", 4*ttl)
	}
}

// TestKeeperWatch checks what the stream keeper relies on: etcd accepts a
// watch from KeeperRev (a revision no cluster reaches), confirms it, keeps
// it open and reports nothing when its key changes.
func TestKeeperWatch(t *testing.T) {
	c := startCluster(t)
	admin := c.admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := uniqueKey(t)
	wch := admin.Watch(clientv3.WithRequireLeader(ctx), key, clientv3.WithRev(etcdlock.KeeperRev), clientv3.WithCreatedNotify())
	wr := <-wch
	if !wr.Created || wr.Canceled || wr.Err() != nil {
		t.Fatalf("watch from KeeperRev: created %v, canceled %v, err %v", wr.Created, wr.Canceled, wr.Err())
	}
	for i := range 3 {
		if _, err := admin.Put(ctx, key, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	// A watch of the same key from the current revision hears those
	// writes at once; the keeper's must hear nothing.
	select {
	case wr, ok := <-wch:
		t.Fatalf("the keeper's watch reported %+v (open %v)", wr, ok)
	case <-time.After(500 * time.Millisecond):
	}
}
