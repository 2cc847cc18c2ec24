package memlock_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/distlock/distlock"
)

// TestMain fails the package if a test leaves a goroutine running (a
// watchdog, an expiry timer's callback, a waiter).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hold takes key on l with TryAcquire, or fails t.
func hold(t *testing.T, l distlock.Locker, key string, opts ...distlock.Option) distlock.Lease {
	t.Helper()
	ls, err := l.TryAcquire(context.Background(), key, opts...)
	if err != nil {
		t.Fatalf("TryAcquire %q: %v", key, err)
	}
	return ls
}

// mustBeDone fails t unless l's Done closes within d (is closed already,
// for d <= 0).
func mustBeDone(t *testing.T, l distlock.Lease, d time.Duration, what string) {
	t.Helper()
	if d <= 0 {
		select {
		case <-l.Done():
		default:
			t.Fatalf("%s: Done not closed", what)
		}
		return
	}
	select {
	case <-l.Done():
	case <-time.After(d):
		t.Fatalf("%s: Done not closed within %v", what, d)
	}
}
