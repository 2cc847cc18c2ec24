package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
)

// faultTTL is long enough to ride out an election on a loaded host.
const faultTTL = 5 * time.Second

// cut black-holes the links named link to every member; the returned
// func heals them.
func (c *cluster) cut(link string) func() {
	for _, n := range c.Nodes {
		n.Link(link).Blackhole()
	}
	return func() {
		for _, n := range c.Nodes {
			n.Link(link).Heal()
		}
	}
}

// testWaiterCutOff (S26): a queued waiter is cut off from the cluster: its
// Acquire returns ErrSessionExpired within about a TTL, and its entry does
// not block the next client once the holder releases.
func (c *cluster) testWaiterCutOff(t *testing.T) {
	a, b, d := c.locker(t, "a", nil), c.locker(t, "waiter", nil), c.locker(t, "d", nil)
	admin := c.admin(t)
	key := uniqueKey(t)
	ttl := 2 * time.Second
	ls := mustAcquire(t, a, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Minute))
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := b.Acquire(ctx, key, distlock.WithTTL(ttl))
		errc <- err
	}()
	eventually(t, 10*time.Second, "waiter queued", func() bool { return len(entries(t, admin, key)) == 2 })
	heal := c.cut("waiter")
	defer heal()
	cut := time.Now()
	select {
	case err := <-errc:
		wantErr(t, err, etcdlock.ErrSessionExpired, distlock.ErrUnavailable)
		t.Logf("waiter returned %v after the cut: %v", time.Since(cut).Round(time.Millisecond), err)
	case <-time.After(3 * ttl):
		// Say what the waiter did in the end, so that a failure shows
		// whether it was late or never returned (its context ends at 1 min).
		select {
		case err := <-errc:
			t.Fatalf("the cut-off waiter returned only %v after the cut (more than 3 TTLs): %v", time.Since(cut).Round(time.Millisecond), err)
		case <-time.After(time.Minute):
			t.Fatal("the cut-off waiter never returned")
		}
	}
	heal()
	mustRelease(t, ls)
	ctx, cancel := context.WithTimeout(context.Background(), 2*ttl)
	defer cancel()
	ld, err := d.Acquire(ctx, key, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatalf("the next client is blocked by the dead waiter's entry: %v (entries %v)", err, entries(t, admin, key))
	}
	mustRelease(t, ld)
}

// testHolderCutOff (S11): the holder is cut off: it is told the lease is
// lost before another client's Acquire returns.
func (c *cluster) testHolderCutOff(t *testing.T) {
	a, b := c.locker(t, "holder", nil), c.locker(t, "b", nil)
	key := uniqueKey(t)
	ttl := 2 * time.Second
	ls := mustAcquire(t, a, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Minute))
	heal := c.cut("holder")
	defer heal()
	ctx, cancel := context.WithTimeout(context.Background(), 5*ttl)
	defer cancel()
	lb, err := b.Acquire(ctx, key, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatalf("nobody acquired while the holder was cut off: %v", err)
	}
	got := time.Now()
	select {
	case <-ls.Done():
	default:
		t.Fatal("the cut-off holder was not told before b acquired")
	}
	wantErr(t, ls.Err(), distlock.ErrLeaseLost)
	t.Logf("b acquired %v after the cut-off holder was told", got.Sub(ls.ValidUntil()).Round(time.Millisecond))
	heal()
	mustRelease(t, lb)
}

// member returns the index of the leader, or of a follower.
func (c *cluster) member(t *testing.T, leader bool) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	i, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !leader {
		i = (i + 1) % len(c.Nodes)
	}
	return i
}

// retryRelease releases ls, retrying while the cluster elects a leader.
func retryRelease(t *testing.T, ls distlock.Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
}

// kill kills the leader (or a follower) and returns the function that
// starts it again, and its name.
func (c *cluster) kill(t *testing.T, leader bool) (restart func(), name string) {
	t.Helper()
	i := c.member(t, leader)
	if err := c.Nodes[i].Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := c.Nodes[i].Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}, c.Nodes[i].Name()
}

// testKilledWhileHeld (S13): a member is killed while a lock is held: the
// lock stays held (others are refused) and is released normally.
func (c *cluster) testKilledWhileHeld(t *testing.T, leader bool) {
	a, b := c.locker(t, "a", nil), c.locker(t, "b", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key, distlock.WithTTL(faultTTL), distlock.WithAutoExtend(time.Minute))
	restart, _ := c.kill(t, leader)
	defer restart()
	ctx := context.Background()
	deadline := time.Now().Add(2 * faultTTL)
	refused := 0
	for time.Now().Before(deadline) {
		tctx, cancel := context.WithTimeout(ctx, faultTTL)
		_, err := b.TryAcquire(tctx, key, distlock.WithTTL(faultTTL))
		cancel()
		if err == nil {
			t.Fatal("b acquired while a holds")
		}
		if errors.Is(err, distlock.ErrNotAcquired) && !errors.Is(err, distlock.ErrUnavailable) {
			refused++
		}
		time.Sleep(250 * time.Millisecond)
	}
	if refused == 0 {
		t.Fatal("the cluster never answered b during 2 TTLs with one member down")
	}
	if err := ls.Err(); err != nil {
		t.Fatalf("the lock was lost with one member down: %v", err)
	}
	retryRelease(t, ls)
}

// testKilledWhileWaiting (S13): a member is killed while a client waits:
// the holder's release still wakes it.
func (c *cluster) testKilledWhileWaiting(t *testing.T, leader bool) {
	a, b := c.locker(t, "a", nil), c.locker(t, "b", nil)
	admin := c.admin(t)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key, distlock.WithTTL(faultTTL), distlock.WithAutoExtend(time.Minute))
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 6*faultTTL)
		defer cancel()
		lb, err := b.Acquire(ctx, key, distlock.WithTTL(faultTTL))
		if err == nil {
			err = lb.Release(ctx)
		}
		got <- err
	}()
	eventually(t, 10*time.Second, "waiter queued", func() bool { return len(entries(t, admin, key)) == 2 })
	restart, name := c.kill(t, leader)
	defer restart()
	time.Sleep(time.Second)
	retryRelease(t, ls)
	released := time.Now()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
		t.Logf("%s killed: hand-off %v after the release", name, time.Since(released).Round(time.Millisecond))
	case <-time.After(4 * faultTTL):
		t.Fatal("the waiter was not woken")
	}
}

// testMajorityKilled (S14): with 2 of 3 members down, nothing is granted
// and the refusal is prompt; after they return, acquisition works.
func (c *cluster) testMajorityKilled(t *testing.T) {
	a := c.locker(t, "a", nil)
	key := uniqueKey(t)
	mustRelease(t, mustAcquire(t, a, key+".warm", distlock.WithTTL(faultTTL)))
	ctx := context.Background()
	down := []int{c.member(t, true), c.member(t, false)}
	for _, i := range down {
		if err := c.Nodes[i].Kill(ctx); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	tctx, cancel := context.WithTimeout(ctx, 4*faultTTL)
	_, err := a.TryAcquire(tctx, key, distlock.WithTTL(faultTTL))
	cancel()
	took := time.Since(start)
	for _, i := range down {
		if err := c.Nodes[i].Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wantErr(t, err, distlock.ErrUnavailable)
	if took > 2*faultTTL {
		t.Fatalf("refusal took %v", took)
	}
	t.Logf("refused in %v: %v", took.Round(time.Millisecond), err)
	actx, acancel := context.WithTimeout(ctx, 30*time.Second)
	defer acancel()
	ls, err := a.Acquire(actx, key, distlock.WithTTL(faultTTL))
	if err != nil {
		t.Fatalf("no recovery: %v", err)
	}
	mustRelease(t, ls)
	_ = fmt.Sprint()
}

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
