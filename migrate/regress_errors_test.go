package migrate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/migrate"
)

// TestCancelledErrorAlsoSaysDeadline: a cancelled both Acquire matches
// context.Canceled only, not the inner wait's deadline.
func TestCancelledErrorAlsoSaysDeadline(t *testing.T) {
	f := newFleet(t)
	key := locktest.UniqueKey(t)
	busy := locktest.MustAcquire(t, f.to, key)
	defer locktest.MustRelease(t, busy)
	l := f.client(migrate.PhaseBoth)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := l.Acquire(ctx, key, distlock.WithTTL(30*time.Millisecond))
	if errors.Is(err, context.Canceled) && errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled Acquire's error matches both Canceled and DeadlineExceeded: %q", err)
	}
}
