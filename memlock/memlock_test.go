package memlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/memlock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAcquireContentionRelease(t *testing.T) {
	ctx := context.Background()
	a := memlock.New(nil)
	b := a.NewHandle()
	la, err := a.TryAcquire(ctx, "k", distlock.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(la.Token()) < 32 || la.Fence() == 0 || !la.ValidUntil().After(time.Now()) {
		t.Fatalf("lease fields: token %q fence %d valid %v", la.Token(), la.Fence(), la.ValidUntil())
	}
	if _, err := b.TryAcquire(ctx, "k"); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("second holder: %v", err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(la.Err(), distlock.ErrReleased) {
		t.Fatalf("Err after release: %v", la.Err())
	}
	select {
	case <-la.Done():
	default:
		t.Fatal("Done not closed after release")
	}
	lb, err := b.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if lb.Fence() <= la.Fence() || lb.Token() == la.Token() {
		t.Fatalf("fence %d after %d, tokens %s %s", lb.Fence(), la.Fence(), lb.Token(), la.Token())
	}
	_ = lb.Release(ctx)
}

func TestExpiryNotifiesAndStaleCallsAreRefused(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	a, err := l.TryAcquire(ctx, "k", distlock.WithTTL(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Done():
	case <-time.After(time.Second):
		t.Fatal("no lost notification after TTL")
	}
	if !errors.Is(a.Err(), distlock.ErrLeaseLost) || !errors.Is(a.Err(), lease.ErrExpired) {
		t.Fatalf("Err: %v", a.Err())
	}
	// The lease reports itself lost a drift margin before the key expires.
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	b, err := l.Acquire(wctx, "k", distlock.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Extend(ctx, time.Second); !errors.Is(err, distlock.ErrLeaseLost) {
		t.Fatalf("extend after expiry: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, distlock.ErrLeaseLost) {
		t.Fatalf("stale release: %v", err)
	}
	if _, err := l.TryAcquire(ctx, "k"); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("stale release freed the next holder's key: %v", err)
	}
	_ = b.Release(ctx)
}

func TestWatchdogExtendsAndStopsAtCap(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	a, err := l.TryAcquire(ctx, "k", distlock.WithTTL(60*time.Millisecond), distlock.WithAutoExtend(400*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond) // four TTLs
	if a.Err() != nil {
		t.Fatalf("lost under watchdog: %v", a.Err())
	}
	if _, err := l.NewHandle().TryAcquire(ctx, "k"); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("key free while watchdog runs: %v", err)
	}
	select {
	case <-a.Done():
	case <-time.After(time.Second):
		t.Fatal("watchdog did not stop at max hold")
	}
	if !errors.Is(a.Err(), lease.ErrMaxHold) {
		t.Fatalf("Err at cap: %v", a.Err())
	}
	_ = a.Release(ctx)
}

func TestReleaseStopsWatchdog(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	a, err := l.TryAcquire(ctx, "k", distlock.WithTTL(30*time.Millisecond), distlock.WithAutoExtend(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := l.TryAcquire(ctx, "k", distlock.WithTTL(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// goleak in TestMain fails the package if the watchdog goroutine lived on.
	time.Sleep(100 * time.Millisecond)
	if b.Err() != nil {
		t.Fatalf("new holder disturbed: %v", b.Err())
	}
	_ = b.Release(ctx)
}

func TestBlockingAcquireWokenByRelease(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	a, _ := l.TryAcquire(ctx, "k")
	got := make(chan time.Duration, 1)
	go func() {
		// A long retry delay: only the push wake-up can make this quick.
		b, err := l.Acquire(ctx, "k", distlock.WithRetryDelay(5*time.Second, 5*time.Second))
		if err != nil {
			got <- -1
			return
		}
		released := time.Now()
		got <- 0
		_ = b.Release(ctx)
		_ = released
	}()
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	_ = a.Release(ctx)
	select {
	case r := <-got:
		if r < 0 {
			t.Fatal("acquire failed")
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("hand-off took %v", d)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("waiter not woken by release")
	}
}

func TestAcquireContextEnds(t *testing.T) {
	l := memlock.New(nil)
	a, _ := l.TryAcquire(context.Background(), "k")
	defer a.Release(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := l.Acquire(ctx, "k")
	if !errors.Is(err, distlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
}

func TestBadInputAndClose(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	if _, err := l.TryAcquire(ctx, ""); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("empty key: %v", err)
	}
	if _, err := l.Acquire(ctx, "k", distlock.WithTTL(0)); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("ttl 0: %v", err)
	}
	if _, err := l.Acquire(ctx, "k", distlock.WithAutoExtend(-time.Second)); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("negative max hold: %v", err)
	}
	a, _ := l.TryAcquire(ctx, "k")
	if err := a.Extend(ctx, -1); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("extend ttl<0: %v", err)
	}
	waiter := l.NewHandle()
	errc := make(chan error, 1)
	go func() { _, err := waiter.Acquire(ctx, "k"); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	_ = waiter.Close()
	if err := <-errc; !errors.Is(err, distlock.ErrClosed) {
		t.Fatalf("blocked acquire on close: %v", err)
	}
	if _, err := waiter.TryAcquire(ctx, "k"); !errors.Is(err, distlock.ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	_ = a.Release(ctx)
}

func TestRevokeNotifiesHolder(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	a, _ := l.TryAcquire(ctx, "k")
	if !l.Revoke("k") {
		t.Fatal("revoke found nothing")
	}
	select {
	case <-a.Done():
	default:
		t.Fatal("revoked holder not notified synchronously")
	}
	if !errors.Is(a.Err(), distlock.ErrLeaseLost) {
		t.Fatalf("Err: %v", a.Err())
	}
}

func TestOpenByURL(t *testing.T) {
	ctx := context.Background()
	a, err := distlock.Open(ctx, "mem://urltest?ttl=2s&autoextend=1m")
	if err != nil {
		t.Fatal(err)
	}
	b, err := distlock.Open(ctx, "mem://urltest")
	if err != nil {
		t.Fatal(err)
	}
	la, err := a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Until(la.ValidUntil()); left > 2*time.Second || left < time.Second {
		t.Fatalf("ttl from URL not applied: %v", left)
	}
	if _, err := b.TryAcquire(ctx, "k"); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("same named space does not contend: %v", err)
	}
	_ = la.Release(ctx)
	if _, err := distlock.Open(ctx, "mem://x?tll=2s"); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("unknown param: %v", err)
	}
	if _, err := distlock.Open(ctx, "mem://x?ttl=-1s"); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("bad ttl: %v", err)
	}
	_ = a.Close()
	_ = b.Close()
}

func TestExpiryWakesWaiterWithoutPolling(t *testing.T) {
	ctx := context.Background()
	l := memlock.New(nil)
	a, _ := l.TryAcquire(ctx, "k", distlock.WithTTL(50*time.Millisecond))
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	b, err := l.NewHandle().Acquire(wctx, "k")
	if err != nil {
		t.Fatalf("waiter not woken by expiry: %v", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("woken after %v, TTL 50ms", d)
	}
	_ = b.Release(ctx)
	_ = a.Release(ctx)
}

// TestCloseStopsWatchdogs: Close on a Locker whose auto-extended lease is
// still held stops and joins the lease's watchdog (no goroutine is left
// running); the lease is not released but runs out at its validity.
func TestCloseStopsWatchdogs(t *testing.T) {
	before := goleak.IgnoreCurrent() // judge only goroutines this test starts
	l := memlock.New(nil)
	ls, err := l.Acquire(context.Background(), "k", distlock.WithTTL(60*time.Millisecond), distlock.WithAutoExtend(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, before)
	select {
	case <-ls.Done():
	case <-time.After(time.Second):
		t.Fatal("lease kept alive after Close")
	}
	if !errors.Is(ls.Err(), distlock.ErrLeaseLost) {
		t.Fatalf("Err = %v", ls.Err())
	}
}
