package lease

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/distlock/distlock"
)

// TestMain fails the package if a test leaves a watchdog running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scripted is a lease.Driver whose answers the test sets; it checks the
// lease logic alone (backends are tested on real servers).
type scripted struct {
	mu        sync.Mutex
	extendErr error
	extends   atomic.Int32
	inExtend  atomic.Bool
	released  atomic.Bool
	afterRel  atomic.Int32 // extensions started after Release began
	delay     time.Duration
}

func (d *scripted) Extend(ctx context.Context, ttl time.Duration) (time.Time, error) {
	start := time.Now()
	if d.released.Load() {
		d.afterRel.Add(1)
	}
	d.extends.Add(1)
	d.inExtend.Store(true)
	defer d.inExtend.Store(false)
	select {
	case <-time.After(d.delay):
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.extendErr != nil {
		return time.Time{}, d.extendErr
	}
	return start.Add(ttl), nil
}

func (d *scripted) Release(context.Context) error {
	d.released.Store(true)
	return nil
}

func newLease(d Driver, o distlock.Options) *Lease {
	now := time.Now()
	return New(Config{Key: "k", Token: NewToken(), Fence: 1, Start: now, ValidUntil: now.Add(o.TTL), Options: o, Driver: d})
}

func opts(ttl time.Duration, auto bool, maxHold time.Duration) distlock.Options {
	o := distlock.DefaultOptions()
	o.TTL, o.AutoExtend, o.MaxHold = ttl, auto, maxHold
	return o
}

// TestTransientRenewalFailureReportedWhenValidityRunsOut checks that a
// watchdog whose extensions keep failing with an error of unknown outcome
// retries them, and that when the validity runs out Err joins
// ErrLeaseLost, ErrExpired and the last failure.
func TestTransientRenewalFailureReportedWhenValidityRunsOut(t *testing.T) {
	transient := errors.New("connection refused")
	d := &scripted{extendErr: transient}
	l := newLease(d, opts(90*time.Millisecond, true, time.Hour))
	select {
	case <-l.Done():
	case <-time.After(time.Second):
		t.Fatal("no notification")
	}
	if !errors.Is(l.Err(), distlock.ErrLeaseLost) || !errors.Is(l.Err(), transient) || !errors.Is(l.Err(), ErrExpired) {
		t.Fatalf("Err = %v", l.Err())
	}
	if n := d.extends.Load(); n < 2 {
		t.Fatalf("transient failure not retried: %d attempts", n)
	}
	_ = l.Release(context.Background())
}

// TestDefiniteLossEndsAtOnce checks that an Extend answered with
// ErrLeaseLost closes Done at once and that later Extends fail the same way.
func TestDefiniteLossEndsAtOnce(t *testing.T) {
	d := &scripted{extendErr: errors.Join(distlock.ErrLeaseLost, errors.New("token mismatch"))}
	l := newLease(d, opts(time.Hour, false, time.Hour))
	if err := l.Extend(context.Background(), time.Hour); !errors.Is(err, distlock.ErrLeaseLost) {
		t.Fatalf("extend: %v", err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done not closed on a definite loss")
	}
	if err := l.Extend(context.Background(), time.Hour); !errors.Is(err, distlock.ErrLeaseLost) {
		t.Fatalf("extend of a lost lease: %v", err)
	}
}

// TestReleaseWaitsForTheWatchdog checks that Release during an extension
// waits for it, that no extension starts after Release, and that a second
// Release returns the first one's result.
func TestReleaseWaitsForTheWatchdog(t *testing.T) {
	d := &scripted{delay: 30 * time.Millisecond}
	l := newLease(d, opts(30*time.Millisecond, true, time.Hour))
	for !d.inExtend.Load() { // catch the watchdog mid-extension
		time.Sleep(time.Millisecond)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := d.afterRel.Load(); n != 0 {
		t.Fatalf("%d extensions started after Release", n)
	}
	if !errors.Is(l.Err(), distlock.ErrReleased) {
		t.Fatalf("Err = %v", l.Err())
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("second release: %v", err)
	}
}

// TestMaxHoldCapsRenewal checks that the watchdog stops at the max hold and
// the lease then ends with ErrMaxHold, near the cap.
func TestMaxHoldCapsRenewal(t *testing.T) {
	d := &scripted{}
	start := time.Now()
	l := newLease(d, opts(60*time.Millisecond, true, 200*time.Millisecond))
	<-l.Done()
	held := time.Since(start)
	if !errors.Is(l.Err(), ErrMaxHold) {
		t.Fatalf("Err = %v", l.Err())
	}
	if held < 150*time.Millisecond || held > 260*time.Millisecond {
		t.Fatalf("held %v, cap 200ms", held)
	}
	_ = l.Release(context.Background())
}

// TestLeaseAlreadyExpiredAtCreation checks that a lease created past its
// validity reports itself lost.
func TestLeaseAlreadyExpiredAtCreation(t *testing.T) {
	now := time.Now()
	l := New(Config{Key: "k", Token: NewToken(), Fence: 1, Start: now.Add(-time.Second), ValidUntil: now.Add(-time.Millisecond),
		Options: opts(time.Second, false, time.Hour), Driver: &scripted{}})
	select {
	case <-l.Done():
	case <-time.After(time.Second):
		t.Fatal("expired lease not reported lost")
	}
}

// TestTokensAreRandom128Bit checks that tokens are 32 hex digits (128 bits)
// and do not repeat over a thousand draws.
func TestTokensAreRandom128Bit(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		tok := NewToken()
		if len(tok) != 32 || seen[tok] {
			t.Fatalf("token %q", tok)
		}
		seen[tok] = true
	}
}

// TestGrantRefusesALeaseExpiredInFlight checks that Grant of a lease whose
// validity passed during the acquisition returns an error matching
// ErrUnavailable and ErrExpiredInFlight and releases the key, while a
// valid one is granted.
func TestGrantRefusesALeaseExpiredInFlight(t *testing.T) {
	d := &scripted{}
	now := time.Now()
	_, err := Grant(context.Background(), Config{Key: "k", Token: NewToken(), Fence: 1, Start: now.Add(-2 * time.Second),
		ValidUntil: now.Add(-time.Second), Options: opts(time.Second, true, time.Hour), Driver: d})
	if !errors.Is(err, distlock.ErrUnavailable) || !errors.Is(err, ErrExpiredInFlight) {
		t.Fatalf("got %v", err)
	}
	if !d.released.Load() {
		t.Fatal("key left behind")
	}
	l, err := Grant(context.Background(), Config{Key: "k", Token: NewToken(), Fence: 1, Start: now,
		ValidUntil: now.Add(time.Second), Options: opts(time.Second, false, time.Hour), Driver: d})
	if err != nil || l.Err() != nil {
		t.Fatalf("valid grant refused: %v", err)
	}
	_ = l.Release(context.Background())
}

// TestOnEndRunsOnceAfterDone: the hook runs exactly once, after Done is
// closed, whether the lease is released, lost or expires, and a later
// Release or Lose does not run it again.
func TestOnEndRunsOnceAfterDone(t *testing.T) {
	for _, end := range []string{"release", "lose", "expire"} {
		t.Run(end, func(t *testing.T) {
			var calls atomic.Int32
			var doneFirst atomic.Bool
			ttl := time.Hour
			if end == "expire" {
				ttl = 20 * time.Millisecond
			}
			now := time.Now()
			var lp atomic.Pointer[Lease]
			l := New(Config{Key: "k", Token: NewToken(), Fence: 1, Start: now, ValidUntil: now.Add(ttl),
				Options: opts(ttl, false, 0), Driver: &scripted{},
				OnEnd: func() {
					for lp.Load() == nil { // New has not returned yet (expiry)
						time.Sleep(time.Millisecond)
					}
					select {
					case <-lp.Load().Done():
						doneFirst.Store(true)
					default:
					}
					calls.Add(1)
				}})
			lp.Store(l)
			switch end {
			case "release":
				if err := l.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
			case "lose":
				l.Lose(errors.New("gone"))
			case "expire":
				<-l.Done()
			}
			deadline := time.Now().Add(time.Second)
			for calls.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			l.Lose(errors.New("again"))
			_ = l.Release(context.Background())
			if n := calls.Load(); n != 1 || !doneFirst.Load() {
				t.Fatalf("OnEnd ran %d times (want 1), after Done: %v", n, doneFirst.Load())
			}
		})
	}
}
