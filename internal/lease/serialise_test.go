package lease

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// applyOnReceipt is a lease.Driver that models a server: an extension takes
// effect when the request arrives (expiry = arrival + ttl), and its reply
// comes back after replyDelay(ttl). The test compares the lease's validity
// with the expiry the server applied last.
type applyOnReceipt struct {
	mu         sync.Mutex
	expiry     time.Time
	inFlight   atomic.Int32
	overlapped atomic.Bool
	replyDelay func(ttl time.Duration) time.Duration
}

func (d *applyOnReceipt) Extend(ctx context.Context, ttl time.Duration) (time.Time, error) {
	if d.inFlight.Add(1) > 1 {
		d.overlapped.Store(true)
	}
	defer d.inFlight.Add(-1)
	start := time.Now()
	d.mu.Lock()
	d.expiry = start.Add(ttl)
	d.mu.Unlock()
	select {
	case <-time.After(d.replyDelay(ttl)):
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
	return start.Add(ttl), nil
}

func (d *applyOnReceipt) Release(context.Context) error { return nil }

// TestConcurrentExtendsTakeTurns: a long extension whose reply is slow and
// a short one sent meanwhile. Were they sent together, the server would
// apply the long one, then the short one, while the long reply, read last,
// would leave ValidUntil an hour past the server's expiry. They take
// turns, so the validity is never later than what the server holds.
func TestConcurrentExtendsTakeTurns(t *testing.T) {
	d := &applyOnReceipt{replyDelay: func(ttl time.Duration) time.Duration {
		if ttl > time.Minute {
			return 50 * time.Millisecond
		}
		return 0
	}}
	l := newLease(d, opts(time.Second, false, time.Hour))
	defer l.Release(context.Background())
	long := make(chan error, 1)
	go func() { long <- l.Extend(context.Background(), time.Hour) }()
	for d.inFlight.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := l.Extend(context.Background(), 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := <-long; err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	server := d.expiry
	d.mu.Unlock()
	if d.overlapped.Load() {
		t.Error("two extensions were in flight at once")
	}
	if vu := l.ValidUntil(); vu.After(server) {
		t.Fatalf("ValidUntil %v after the server's expiry", vu.Sub(server))
	}
}

// TestExtendWaitingForAnotherEndsWithItsContext: a caller queued behind an
// extension in flight returns when its context ends, with both the
// sentinel and ctx.Err().
func TestExtendWaitingForAnotherEndsWithItsContext(t *testing.T) {
	d := &applyOnReceipt{replyDelay: func(time.Duration) time.Duration { return 200 * time.Millisecond }}
	l := newLease(d, opts(time.Second, false, time.Hour))
	defer l.Release(context.Background())
	go func() { _ = l.Extend(context.Background(), time.Second) }()
	for d.inFlight.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := l.Extend(ctx, time.Second)
	if !errors.Is(err, distlock.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
}

// TestExtendRefusesALeaseWhoseValidityPassed: between the end of validity
// and the expiry timer (a paused process, a late timer) the server may
// still hold the key, but it may also have given it away: Extend must not
// revive the lease. The timer is stopped here to hold that window open.
func TestExtendRefusesALeaseWhoseValidityPassed(t *testing.T) {
	d := &scripted{}
	now := time.Now()
	l := New(Config{Key: "k", Token: NewToken(), Fence: 1, Start: now, ValidUntil: now.Add(5 * time.Millisecond),
		Options: opts(time.Second, false, time.Hour), Driver: d})
	l.mu.Lock()
	l.expiry.Stop()
	l.mu.Unlock()
	time.Sleep(10 * time.Millisecond)
	err := l.Extend(context.Background(), time.Second)
	if !errors.Is(err, distlock.ErrLeaseLost) || !errors.Is(err, ErrExpired) {
		t.Fatalf("extend after validity: %v", err)
	}
	if n := d.extends.Load(); n != 0 {
		t.Fatalf("%d extensions sent for an expired lease", n)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done not closed")
	}
}

// TestGroupCloseStopsAndJoinsWatchdogs: a Locker's Close stops the
// watchdogs of leases it handed out (an extension in flight is cancelled)
// and waits for them; the leases then run out at their validity; a lease
// made after Close starts no watchdog.
func TestGroupCloseStopsAndJoinsWatchdogs(t *testing.T) {
	var g Group
	d := &scripted{delay: time.Hour} // an extension in flight never answers
	now := time.Now()
	o := opts(60*time.Millisecond, true, time.Hour)
	l := New(Config{Key: "k", Token: NewToken(), Fence: 1, Start: now, ValidUntil: now.Add(o.TTL), Options: o, Driver: d, Group: &g})
	for !d.inExtend.Load() {
		time.Sleep(time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { g.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(time.Second):
		t.Fatal("Group.Close did not stop the watchdog")
	}
	select {
	case <-l.watchDone:
	default:
		t.Fatal("Close returned before the watchdog exited")
	}
	select {
	case <-l.Done():
	case <-time.After(time.Second):
		t.Fatal("lease not ended at its validity")
	}
	if !errors.Is(l.Err(), ErrExpired) {
		t.Fatalf("Err = %v", l.Err())
	}
	late := New(Config{Key: "k", Token: NewToken(), Fence: 2, Start: time.Now(), ValidUntil: time.Now().Add(time.Hour), Options: o, Driver: d, Group: &g})
	if late.watchDone != nil {
		t.Fatal("a watchdog started after Close")
	}
	if err := late.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.Close() // idempotent
}

// TestUnknownExtendOutcomeCapsValidity: an extension to a shorter TTL that
// fails without a definite answer may still have been applied by the
// servers, so the lease keeps only the validity both outcomes allow (and
// its expiry timer fires then).
func TestUnknownExtendOutcomeCapsValidity(t *testing.T) {
	d := &scripted{extendErr: errors.Join(distlock.ErrUnavailable, errors.New("reply timed out"))}
	l := newLease(d, opts(time.Hour, false, time.Hour))
	before := time.Now()
	if err := l.Extend(context.Background(), 80*time.Millisecond); !errors.Is(err, distlock.ErrUnavailable) {
		t.Fatalf("extend: %v", err)
	}
	if vu := l.ValidUntil(); vu.After(before.Add(80 * time.Millisecond)) {
		t.Fatalf("ValidUntil %v after the request, beyond the 80ms the servers may have applied", vu.Sub(before))
	}
	select {
	case <-l.Done():
	case <-time.After(time.Second):
		t.Fatal("lease not ended at the capped validity")
	}
	if !errors.Is(l.Err(), ErrExpired) {
		t.Fatalf("Err = %v", l.Err())
	}
}

// TestUnknownExtendOutcomeCapsWithTheBackendsDrift: the cap subtracts the
// drift the backend allows (Config.Drift), not the default: a Redlock
// configured with a larger drift computed its validities with it, and the
// servers may have applied the new TTL as soon as the request left.
func TestUnknownExtendOutcomeCapsWithTheBackendsDrift(t *testing.T) {
	d := &scripted{extendErr: errors.Join(distlock.ErrUnavailable, errors.New("reply timed out"))}
	o := opts(time.Hour, false, time.Hour)
	now := time.Now()
	l := New(Config{Key: "k", Token: NewToken(), Fence: 1, Start: now, ValidUntil: now.Add(o.TTL), Options: o, Driver: d,
		Drift: func(time.Duration) time.Duration { return 300 * time.Millisecond }})
	defer l.Release(context.Background())
	if err := l.Extend(context.Background(), time.Second); !errors.Is(err, distlock.ErrUnavailable) {
		t.Fatalf("extend: %v", err)
	}
	after := time.Now() // the request was sent before this
	if vu := l.ValidUntil(); vu.After(after.Add(700 * time.Millisecond)) {
		t.Fatalf("ValidUntil %v after the extension returned: the 300ms drift of the backend was not subtracted from the 1s TTL", vu.Sub(after))
	}
}
