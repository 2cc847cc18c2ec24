package multilock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/multilock"
)

// TestBadInput: every bad argument fails with ErrInvalidArgument, says
// what to fix, and leaves no key held.
func TestBadInput(t *testing.T) {
	mine, other := newMem(t)
	tooMany := make([]string, multilock.MaxKeys+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("k%03d", i)
	}
	cases := []struct {
		name   string
		l      distlock.Locker
		keys   []string
		opts   []distlock.Option
		saying string
	}{
		{"nil locker", nil, []string{"a"}, nil, "nil Locker"},
		{"nil set", mine, nil, nil, "no keys"},
		{"empty set", mine, []string{}, nil, "no keys"},
		{"empty key", mine, []string{"a", ""}, nil, "key 2 of 2 is empty"},
		{"duplicate", mine, []string{"b", "a", "b"}, nil, `key "b" given twice`},
		{"too many", mine, tooMany, nil, "at most 64"},
		{"bad ttl", mine, []string{"a", "b"}, []distlock.Option{distlock.WithTTL(-time.Second)}, "TTL must be > 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range []func(context.Context, distlock.Locker, []string, ...distlock.Option) (*multilock.Lease, error){
				multilock.Acquire, multilock.TryAcquire,
			} {
				ml, err := f(context.Background(), tc.l, tc.keys, tc.opts...)
				if ml != nil {
					t.Fatal("got a lease")
				}
				locktest.WantErr(t, err, distlock.ErrInvalidArgument)
				if !strings.Contains(err.Error(), tc.saying) {
					t.Fatalf("error %q does not say %q", err, tc.saying)
				}
			}
		})
	}
	wantFree(t, other, "a", "b")
	if _, err := multilock.Canonical(tooMany[:multilock.MaxKeys]); err != nil {
		t.Fatalf("MaxKeys keys: %v", err)
	}
}

// TestCanonicalOrder: the lease's keys, tokens and fences follow the
// bytewise order whatever order the caller passed.
func TestCanonicalOrder(t *testing.T) {
	mine, _ := newMem(t)
	ml := mustAcquire(t, mine, []string{"b", "C", "a", "é", "B"})
	defer mustRelease(t, ml)
	want := []string{"B", "C", "a", "b", "é"}
	if got := ml.Keys(); !slices.Equal(got, want) {
		t.Fatalf("Keys %v, want %v", got, want)
	}
	if got := ml.Key(); got != "B,C,a,b,é" {
		t.Fatalf("Key %q", got)
	}
	parts, fences := ml.Parts(), ml.Fences()
	for i, p := range parts {
		if p.Key() != want[i] || fences[want[i]] != p.Fence() || p.Fence() == 0 {
			t.Fatalf("part %d: key %q fence %d, Fences %v", i, p.Key(), p.Fence(), fences)
		}
		if i > 0 && p.Fence() <= parts[i-1].Fence() {
			t.Fatalf("part %d taken before part %d: fences %v", i, i-1, fences)
		}
	}
	if ml.Fence() != parts[0].Fence() {
		t.Fatalf("Fence %d, want the first key's %d", ml.Fence(), parts[0].Fence())
	}
	if n := strings.Count(ml.Token(), ",") + 1; n != len(want) {
		t.Fatalf("Token %q has %d parts", ml.Token(), n)
	}
}

// TestTryAcquireAllOrNothing: a key held elsewhere fails TryAcquire with
// ErrNotAcquired naming it, and the keys before it are released.
func TestTryAcquireAllOrNothing(t *testing.T) {
	mine, other := newMem(t)
	blocker := locktest.MustAcquire(t, other, "c")
	ml, err := multilock.TryAcquire(context.Background(), mine, []string{"d", "c", "b", "a"})
	if ml != nil {
		t.Fatal("got a lease with c held elsewhere")
	}
	locktest.WantErr(t, err, distlock.ErrNotAcquired)
	if !strings.Contains(err.Error(), `key "c" (3 of 4)`) {
		t.Fatalf("error %q does not name key c", err)
	}
	wantFree(t, other, "a", "b", "d")
	locktest.MustRelease(t, blocker)
	mustRelease(t, mustAcquire(t, mine, []string{"d", "c", "b", "a"}))
}

// TestCancelMidway: a blocking Acquire cancelled while it waits for its
// third key returns ErrNotAcquired and context.Canceled and releases the
// two keys it took, though its own context has ended.
func TestCancelMidway(t *testing.T) {
	mine, other := newMem(t)
	blocker := locktest.MustAcquire(t, other, "c")
	defer locktest.MustRelease(t, blocker)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		ml, err := multilock.Acquire(ctx, mine, []string{"a", "b", "c", "d"})
		if ml != nil {
			err = errors.Join(errors.New("got a lease"), ml.Release(context.Background()))
		}
		errc <- err
	}()
	locktest.Eventually(t, 5*time.Second, "a and b taken", func() bool { return held(t, other, "b") })
	if !held(t, other, "a") {
		t.Fatal("b held but not a: the keys were not taken in order")
	}
	cancel()
	err := <-errc
	locktest.WantErr(t, err, distlock.ErrNotAcquired, context.Canceled)
	wantFree(t, other, "a", "b", "d")
}

// TestDeadlineMidway: an Acquire whose deadline passes while it waits
// matches ErrNotAcquired and DeadlineExceeded and holds nothing after.
func TestDeadlineMidway(t *testing.T) {
	mine, other := newMem(t)
	blocker := locktest.MustAcquire(t, other, "m")
	defer locktest.MustRelease(t, blocker)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := multilock.Acquire(ctx, mine, []string{"z", "m", "a"})
	locktest.WantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
	wantFree(t, other, "a", "z")
}

// TestEndedContext: a context already ended fails both calls with
// ErrNotAcquired and its error, before any key is taken.
func TestEndedContext(t *testing.T) {
	mine, other := newMem(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := multilock.Acquire(ctx, mine, []string{"a", "b"})
	locktest.WantErr(t, err, distlock.ErrNotAcquired, context.Canceled)
	_, err = multilock.TryAcquire(ctx, mine, []string{"a", "b"})
	locktest.WantErr(t, err, distlock.ErrNotAcquired, context.Canceled)
	wantFree(t, other, "a", "b")
}

// TestClosedLocker: Acquire on a closed Locker fails with ErrClosed.
func TestClosedLocker(t *testing.T) {
	mine, _ := newMem(t)
	_ = mine.Close()
	_, err := multilock.Acquire(context.Background(), mine, []string{"a", "b"})
	locktest.WantErr(t, err, distlock.ErrClosed)
}

// TestLostWhileWaiting: a key taken early that expires while Acquire
// waits for a later one fails the call with ErrNotAcquired and
// ErrLeaseLost, and the later key is released again.
func TestLostWhileWaiting(t *testing.T) {
	mine, other := newMem(t)
	blocker := locktest.MustAcquire(t, other, "b")
	errc := make(chan error, 1)
	go func() {
		ml, err := multilock.Acquire(context.Background(), mine, []string{"a", "b"}, distlock.WithTTL(20*time.Millisecond))
		if ml != nil {
			err = errors.Join(errors.New("got a lease"), ml.Release(context.Background()))
		}
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond) // "a" expires meanwhile
	locktest.MustRelease(t, blocker)
	err := <-errc
	locktest.WantErr(t, err, distlock.ErrNotAcquired, distlock.ErrLeaseLost)
	if !strings.Contains(err.Error(), `key "a" (1 of 2) was lost`) {
		t.Fatalf("error %q does not name key a", err)
	}
	wantFree(t, other, "a", "b")
}
