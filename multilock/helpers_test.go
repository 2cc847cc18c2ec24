package multilock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/memlock"
	"github.com/distlock/distlock/multilock"
)

// TestMain fails the package if a test leaves a goroutine running (a
// lease's watcher, a part's watchdog). The Docker client's idle HTTP
// connections and go-redis's dial back-off are not ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// newMem returns a memlock Locker on a private space and a second client
// on the same space (another process's view), both closed when t ends.
func newMem(t *testing.T) (mine, other *memlock.Locker) {
	t.Helper()
	mine = memlock.New(nil)
	other = mine.NewHandle()
	t.Cleanup(func() {
		_ = other.Close()
		_ = mine.Close()
	})
	return mine, other
}

// mustAcquire takes keys on l within 10 s or fails t.
func mustAcquire(t *testing.T, l distlock.Locker, keys []string, opts ...distlock.Option) *multilock.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ml, err := multilock.Acquire(ctx, l, keys, opts...)
	if err != nil {
		t.Fatalf("Acquire %v: %v", keys, err)
	}
	return ml
}

// mustRelease releases ml within 5 s or fails t.
func mustRelease(t *testing.T, ml *multilock.Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ml.Release(ctx); err != nil {
		t.Fatalf("Release %s: %v", ml.Key(), err)
	}
}

// held reports whether key is held by someone, as seen by other: a
// TryAcquire that fails with ErrNotAcquired. A key found free is released
// again at once.
func held(t *testing.T, other distlock.Locker, key string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ls, err := other.TryAcquire(ctx, key)
	switch {
	case errors.Is(err, distlock.ErrNotAcquired):
		return true
	case err != nil:
		t.Fatalf("TryAcquire %s: %v", key, err)
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("Release %s: %v", key, err)
	}
	return false
}

// wantFree fails t unless every key is free, as seen by other.
func wantFree(t *testing.T, other distlock.Locker, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if held(t, other, k) {
			t.Errorf("key %q is still held", k)
		}
	}
}

// wantDone fails t unless ml's Done closes within 5 s.
func wantDone(t *testing.T, ml *multilock.Lease) {
	t.Helper()
	select {
	case <-ml.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed within 5 s")
	}
}
