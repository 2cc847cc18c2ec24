package migrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/migrate"
)

// A backend whose Release honours ctx (as a go-redis command does) and keeps
// working after Close (redissingle with a caller-owned client).
type ctxBackend struct{ distlock.Locker }

func (c ctxBackend) Acquire(ctx context.Context, k string, o ...distlock.Option) (distlock.Lease, error) {
	ls, err := c.Locker.Acquire(ctx, k, o...)
	if err != nil {
		return nil, err
	}
	return ctxLease{ls}, nil
}

type ctxLease struct{ distlock.Lease }

func (l ctxLease) Release(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return l.Lease.Release(ctx)
}

// TestCleanupCtxCancelledAtClose: a both waiter interrupted by Close
// releases the old lease with a context Close has not cancelled.
func TestCleanupCtxCancelledAtClose(t *testing.T) {
	f := newFleet(t)
	key := locktest.UniqueKey(t)
	busy := locktest.MustAcquire(t, f.to, key)
	defer locktest.MustRelease(t, busy)
	l, err := migrate.New(ctxBackend{f.from.NewHandle()}, f.to.NewHandle(), migrate.Options{Phase: migrate.PhaseBoth})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { _, err := l.Acquire(context.Background(), key, distlock.WithTTL(5*time.Second)); errc <- err }()
	time.Sleep(100 * time.Millisecond)
	_ = l.Close()
	t.Logf("Acquire: %v", <-errc)
	if heldOn(t, f.from, key) {
		t.Fatal("Close during the both wait left the old lock held until its TTL: cleanup ran with the already-cancelled Closing context")
	}
}
