package etcdlock_test

import (
	"context"
	"path"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
)

// TestGrantAfterSessionDied: the etcd lease an acquisition queued its
// entry under is revoked (as an operator would) after the entry is
// written and before the lock is granted, and the session learns it (a
// keepalive is refused). The entry went with the lease: the acquisition
// must fail (ErrSessionExpired, matching distlock.ErrUnavailable), never
// hand out a lease that is already lost. The next acquisition of the key
// works at once, on a new etcd lease. Default TTL.
func TestGrantAfterSessionDied(t *testing.T) {
	c := startMember(t)
	admin := c.admin(t)
	for _, op := range []string{"TryAcquire", "Acquire"} {
		t.Run(op, func(t *testing.T) {
			l := c.locker(t, op, nil)
			key := uniqueKey(t)
			// other shares the etcd lease: its driver shows when the
			// session learns of the revocation.
			other := mustAcquire(t, l, key+".other")
			ox := etcdlock.HeldDriver(l, other)
			id, err := strconv.ParseInt(path.Base(ox.Entry()), 16, 64)
			if err != nil {
				t.Fatalf("lease ID of entry %s: %v", ox.Entry(), err)
			}
			var once sync.Once
			etcdlock.SetBeforeGrant(t, func() {
				once.Do(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					if _, err := admin.Revoke(ctx, clientv3.LeaseID(id)); err != nil {
						t.Errorf("revoke: %v", err)
						return
					}
					// An extension sends a keepalive, which the server refuses.
					_ = other.Extend(ctx, distlock.DefaultTTL)
					select {
					case <-ox.SessionDone():
					case <-ctx.Done():
						t.Error("the session did not learn of the revocation within 10 s")
					}
				})
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			acquire := l.TryAcquire
			if op == "Acquire" {
				acquire = l.Acquire
			}
			ls, err := acquire(ctx, key)
			if err == nil {
				t.Fatalf("%s returned a lease of a dead session: Err %v, valid for %v more", op, ls.Err(), time.Until(ls.ValidUntil()).Round(time.Millisecond))
			}
			wantErr(t, err, etcdlock.ErrSessionExpired, distlock.ErrUnavailable)
			t.Logf("%s: %v", op, err)
			etcdlock.SetBeforeGrant(t, nil)
			ls = mustAcquire(t, l, key)
			if got := entries(t, admin, key); len(got) != 1 || got[0] != etcdlock.HeldDriver(l, ls).Entry() {
				t.Fatalf("entries %v, want the new holder's only", got)
			}
			mustRelease(t, ls)
		})
	}
}
