package etcdlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
	"github.com/distlock/distlock/testbed"
)

// TestReleaseReplyLost: a Release whose delete the server applied but
// whose reply was lost (the try failed) tries again and finds the entry
// gone. The lost try deleted it, so the Release succeeds; it used to
// report the lock lost (ErrKeyGone) although nobody else had touched it.
// An entry someone else deleted is still reported gone.
func TestReleaseReplyLost(t *testing.T) {
	testbed.RequireDocker(t)
	c := &cluster{testbed.StartEtcd(t, 1, testbed.EtcdOptions{})}
	admin := c.admin(t)
	l := c.locker(t, "lost-reply", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("OwnDelete", func(t *testing.T) {
		key := uniqueKey(t)
		ls := mustAcquire(t, l, key)
		etcdlock.SetDeleteRepliesLost(t, 1)
		if err := ls.Release(ctx); err != nil {
			t.Fatalf("Release after its applied delete lost its reply: %v, want nil", err)
		}
		if got := entries(t, admin, key); len(got) != 0 {
			t.Fatalf("entries after Release: %v, want none", got)
		}
		// The key is free for the next holder.
		mustRelease(t, mustAcquire(t, l, key))
	})

	t.Run("DeletedByOther", func(t *testing.T) {
		key := uniqueKey(t)
		ls := mustAcquire(t, l, key)
		x := etcdlock.HeldDriver(l, ls)
		if _, err := admin.Delete(ctx, x.Entry()); err != nil {
			t.Fatal(err)
		}
		wantErr(t, ls.Release(ctx), distlock.ErrLeaseLost)
	})

}
