package locktest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// InspectTraits says which LockInfo fields a backend fills, so that one
// contract test covers every Inspector.
type InspectTraits struct {
	// HolderIsTokenID: LockInfo.Holder is distlock.HolderID(lease.Token()).
	HolderIsTokenID bool
	// FenceStored: LockInfo.Fence is the holder's lease.Fence().
	FenceStored bool
	// TTLBased: a held key reports 0 < TTL <= the lease's TTL, and the
	// key is no longer held after its TTL.
	TTLBased bool
	// Queues: LockInfo.Waiters counts a blocked Acquire.
	Queues bool
	// IDsOnly: the server keeps no key names, so List cannot list the
	// held keys by name; the contract only checks that it answers.
	IDsOnly bool
	// StoresLabel: LockInfo.Label is the holder's distlock.WithLabel.
	StoresLabel bool
	// MonotonicFence: the holder after a ForceRelease gets a higher fence.
	MonotonicFence bool
	// LostWithin bounds the time from ForceRelease to the evicted lease's
	// Done; 0 skips the check (no LostNotification).
	LostWithin time.Duration
}

// Inspector runs the Inspector contract on a and b, two clients of one
// lock space (b inspects and force-releases what a holds). Both must
// implement distlock.Inspector. It closes neither; closed is a third
// client on the space that the contract closes to check ErrClosed.
func Inspector(t *testing.T, a, b, closed distlock.Locker, tr InspectTraits) {
	t.Helper()
	for _, l := range []distlock.Locker{a, b, closed} {
		if _, ok := l.(distlock.Inspector); !ok {
			t.Fatalf("%T does not implement distlock.Inspector", l)
		}
	}
	t.Run("Unheld", func(t *testing.T) { inspectUnheld(t, b) })
	t.Run("Held", func(t *testing.T) { inspectHeld(t, a, b, tr) })
	if tr.TTLBased {
		t.Run("Expired", func(t *testing.T) { inspectExpired(t, a, b) })
	}
	if tr.Queues {
		t.Run("Waiters", func(t *testing.T) { inspectWaiters(t, a, b) })
	}
	t.Run("ForceRelease", func(t *testing.T) { inspectForceRelease(t, a, b, tr) })
	t.Run("List", func(t *testing.T) { inspectList(t, a, b, tr.IDsOnly) })
	t.Run("BadInput", func(t *testing.T) { inspectBadInput(t, b, closed) })
}

func bg(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// MustInspect inspects key through l or fails the test.
func MustInspect(t testing.TB, l distlock.Locker, key string) distlock.LockInfo {
	t.Helper()
	info, err := distlock.Inspect(bg(t), l, key)
	if err != nil {
		t.Fatalf("Inspect %s: %v", key, err)
	}
	if info.Key != key {
		t.Fatalf("Inspect %s: Key = %q", key, info.Key)
	}
	return info
}

func inspectUnheld(t *testing.T, b distlock.Locker) {
	key := UniqueKey(t)
	if info := MustInspect(t, b, key); info.Held || info.Holder != "" || info.Fence != 0 || info.Leak != "" {
		t.Fatalf("never-acquired key reported %+v", info)
	}
	held, err := distlock.ForceRelease(bg(t), b, key)
	if err != nil || held {
		t.Fatalf("ForceRelease of a free key = %v, %v; want false, nil", held, err)
	}
}

func inspectHeld(t *testing.T, a, b distlock.Locker, tr InspectTraits) {
	key := UniqueKey(t)
	const ttl = 10 * time.Second
	const label = "host-1 ünïcode"
	ls := MustAcquire(t, a, key, distlock.WithTTL(ttl), distlock.WithLabel(label))
	info := MustInspect(t, b, key)
	if tr.StoresLabel && info.Label != label {
		t.Fatalf("Label = %q, want %q", info.Label, label)
	}
	if !info.Held || info.Holder == "" || info.Leak != "" {
		t.Fatalf("held key reported %+v", info)
	}
	if tr.HolderIsTokenID && info.Holder != distlock.HolderID(ls.Token()) {
		t.Fatalf("Holder = %q, want HolderID(token) %q", info.Holder, distlock.HolderID(ls.Token()))
	}
	if tr.FenceStored && info.Fence != ls.Fence() {
		t.Fatalf("Fence = %d, want the lease's %d", info.Fence, ls.Fence())
	}
	if tr.TTLBased && (info.TTL <= 0 || info.TTL > ttl) {
		t.Fatalf("TTL = %v, want in (0, %v]", info.TTL, ttl)
	}
	MustRelease(t, ls)
	if info := MustInspect(t, b, key); info.Held || info.Holder != "" || info.Label != "" {
		t.Fatalf("released key reported %+v", info)
	}
	_, err := a.TryAcquire(bg(t), key, distlock.WithLabel(strings.Repeat("x", distlock.MaxLabelLen+1)))
	WantErr(t, err, distlock.ErrInvalidArgument)
}

func inspectExpired(t *testing.T, a, b distlock.Locker) {
	key := UniqueKey(t)
	ls := MustAcquire(t, a, key, distlock.WithTTL(300*time.Millisecond))
	defer ls.Release(bg(t)) //nolint:errcheck // expired: ErrLeaseLost is expected
	Eventually(t, 5*time.Second, "expired key still reported held", func() bool {
		return !MustInspect(t, b, key).Held
	})
}

func inspectWaiters(t *testing.T, a, b distlock.Locker) {
	key := UniqueKey(t)
	ls := MustAcquire(t, a, key, distlock.WithTTL(10*time.Second))
	ctx, cancel := context.WithCancel(bg(t))
	done := make(chan error, 1)
	go func() {
		w, err := b.Acquire(ctx, key, distlock.WithTTL(10*time.Second))
		if err == nil {
			err = w.Release(context.Background())
		}
		done <- err
	}()
	Eventually(t, 10*time.Second, "blocked Acquire not counted in Waiters", func() bool {
		return MustInspect(t, b, key).Waiters >= 1
	})
	cancel()
	WantErr(t, <-done, distlock.ErrNotAcquired)
	MustRelease(t, ls)
}

func inspectForceRelease(t *testing.T, a, b distlock.Locker, tr InspectTraits) {
	key := UniqueKey(t)
	old := MustAcquire(t, a, key, distlock.WithTTL(10*time.Second))
	held, err := distlock.ForceRelease(bg(t), b, key)
	if err != nil || !held {
		t.Fatalf("ForceRelease of a held key = %v, %v; want true, nil", held, err)
	}
	if tr.LostWithin > 0 {
		select {
		case <-old.Done():
			WantErr(t, old.Err(), distlock.ErrLeaseLost)
		case <-time.After(tr.LostWithin):
			t.Fatalf("evicted lease's Done did not fire within %v", tr.LostWithin)
		}
	}
	next := MustAcquire(t, b, key, distlock.WithTTL(10*time.Second))
	if tr.MonotonicFence && next.Fence() <= old.Fence() {
		t.Fatalf("fence after ForceRelease %d, want > evicted holder's %d", next.Fence(), old.Fence())
	}
	WantErr(t, old.Extend(bg(t), 10*time.Second), distlock.ErrLeaseLost)
	WantErr(t, old.Release(bg(t)), distlock.ErrLeaseLost)
	info := MustInspect(t, a, key)
	if !info.Held || info.Holder == "" {
		t.Fatalf("the evicted holder's Extend/Release freed the next holder: %+v", info)
	}
	if tr.HolderIsTokenID && info.Holder != distlock.HolderID(next.Token()) {
		t.Fatalf("Holder = %q, want the next holder's %q", info.Holder, distlock.HolderID(next.Token()))
	}
	MustRelease(t, next)
}

func inspectList(t *testing.T, a, b distlock.Locker, idsOnly bool) {
	if idsOnly {
		ls := MustAcquire(t, a, UniqueKey(t), distlock.WithTTL(10*time.Second))
		defer MustRelease(t, ls)
		l, err := distlock.List(bg(t), b, "", distlock.Page{})
		if err != nil || len(l.Locks) == 0 {
			t.Fatalf("List = %d entries, %v; want the held lock, nil", len(l.Locks), err)
		}
		return
	}
	prefix := UniqueKey(t) + "/"
	keys := []string{prefix + "a", prefix + "b", prefix + "c"}
	for _, k := range keys {
		ls := MustAcquire(t, a, k, distlock.WithTTL(10*time.Second))
		defer MustRelease(t, ls)
	}
	other := MustAcquire(t, a, prefix[:len(prefix)-1]+"-other", distlock.WithTTL(10*time.Second))
	defer MustRelease(t, other)

	var got []string
	page := distlock.Page{Limit: 2}
	for i := 0; ; i++ {
		if i > 3 {
			t.Fatalf("List did not end after %d pages: %v", i, got)
		}
		l, err := distlock.List(bg(t), b, prefix, page)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(l.Locks) > 2 {
			t.Fatalf("List returned %d entries, limit 2", len(l.Locks))
		}
		for _, info := range l.Locks {
			if !info.Held || info.Leak != "" {
				t.Fatalf("listed %+v, want held without leak", info)
			}
			got = append(got, info.Key)
		}
		if l.Next == "" {
			break
		}
		page.Cursor = l.Next
	}
	if strings.Join(got, ",") != strings.Join(keys, ",") {
		t.Fatalf("List(%q) = %v, want %v in key order", prefix, got, keys)
	}
}

func inspectBadInput(t *testing.T, b, closed distlock.Locker) {
	_, err := distlock.Inspect(bg(t), b, "")
	WantErr(t, err, distlock.ErrInvalidArgument)
	_, err = distlock.ForceRelease(bg(t), b, "")
	WantErr(t, err, distlock.ErrInvalidArgument)
	for _, limit := range []int{-1, distlock.MaxListLimit + 1} {
		_, err = distlock.List(bg(t), b, "", distlock.Page{Limit: limit})
		WantErr(t, err, distlock.ErrInvalidArgument)
	}
	if err := closed.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err = distlock.Inspect(bg(t), closed, "k")
	WantErr(t, err, distlock.ErrClosed)
	_, err = distlock.List(bg(t), closed, "", distlock.Page{})
	WantErr(t, err, distlock.ErrClosed)
	_, err = distlock.ForceRelease(bg(t), closed, "k")
	WantErr(t, err, distlock.ErrClosed)
}
