package distlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.uber.org/goleak"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/memlock"
	"github.com/distlock/distlock/redissingle"
	"github.com/distlock/distlock/testbed"
)

// TestMain fails the package if a test leaves a goroutine running (Do's
// lease watcher, a watchdog). The Docker client's idle HTTP connections
// and go-redis's dial back-off are not ours (see redissingle's TestMain).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// newMem returns a memlock Locker closed when t ends.
func newMem(t testing.TB) *memlock.Locker {
	l := memlock.New(nil)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// mustBeFree fails t unless key can be taken on l at once (then frees it).
func mustBeFree(t *testing.T, l distlock.Locker, key string) {
	t.Helper()
	ls, err := l.TryAcquire(context.Background(), key)
	if err != nil {
		t.Fatalf("key %q not free: %v", key, err)
	}
	locktest.MustRelease(t, ls)
}

// mustBeHeld fails t unless key is held on l.
func mustBeHeld(t *testing.T, l distlock.Locker, key string) {
	t.Helper()
	ls, err := l.TryAcquire(context.Background(), key)
	if err == nil {
		locktest.MustRelease(t, ls)
		t.Fatalf("key %q free, want held", key)
	}
	locktest.WantErr(t, err, distlock.ErrNotAcquired)
}

// revokedSection runs Do on key and returns fn's context's cause and Do's
// error once revoke, called while fn runs, has made the lease lost.
func revokedSection(t *testing.T, l distlock.Locker, key string, revoke func(), opts ...distlock.Option) (cause, doErr, leaseErr error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	doErr = distlock.Do(ctx, l, key, func(ctx context.Context, lease distlock.Lease) error {
		if lease.Fence() == 0 || lease.Key() != key {
			t.Errorf("lease: key %q fence %d", lease.Key(), lease.Fence())
		}
		revoke()
		<-ctx.Done()
		cause, leaseErr = context.Cause(ctx), lease.Err()
		return ctx.Err()
	}, opts...)
	return cause, doErr, leaseErr
}

// TestDoCancelledOnRevoke checks that fn's context is cancelled when the
// lease is revoked, with the lease's error as its cause, that Do reports
// the loss once, and that the key is free afterwards.
func TestDoCancelledOnRevoke(t *testing.T) {
	l := newMem(t)
	key := locktest.UniqueKey(t)
	cause, err, leaseErr := revokedSection(t, l, key, func() {
		if !l.Revoke(key) {
			t.Error("Revoke found no holder")
		}
	})
	locktest.WantErr(t, cause, distlock.ErrLeaseLost, leaseErr)
	locktest.WantErr(t, err, distlock.ErrLeaseLost, context.Canceled)
	if n := countMatches(err, leaseErr); n != 1 {
		t.Fatalf("Do's error %q carries the lost lease %d times, want once", err, n)
	}
	mustBeFree(t, l, key)
}

// countMatches counts the leaves of err's join tree that are target.
func countMatches(err, target error) int {
	if err == target {
		return 1
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		n := 0
		for _, e := range j.Unwrap() {
			n += countMatches(e, target)
		}
		return n
	}
	if u := errors.Unwrap(err); u != nil {
		return countMatches(u, target)
	}
	return 0
}

// TestDoLossSeenByErrAndChild checks the other ways fn sees a loss: the
// context's Err without ever waiting on Done, and a child context.
func TestDoLossSeenByErrAndChild(t *testing.T) {
	l := newMem(t)
	key := locktest.UniqueKey(t)
	err := distlock.Do(context.Background(), l, key, func(ctx context.Context, lease distlock.Lease) error {
		l.Revoke(key)
		<-lease.Done()
		if ctx.Err() == nil {
			t.Error("Err nil after the lease was lost")
		}
		locktest.WantErr(t, context.Cause(ctx), distlock.ErrLeaseLost)
		return nil
	})
	locktest.WantErr(t, err, distlock.ErrLeaseLost)

	err = distlock.Do(context.Background(), l, key, func(ctx context.Context, lease distlock.Lease) error {
		child, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		l.Revoke(key)
		<-child.Done()
		locktest.WantErr(t, context.Cause(child), distlock.ErrLeaseLost)
		return context.Cause(child)
	})
	locktest.WantErr(t, err, distlock.ErrLeaseLost)
	mustBeFree(t, l, key)
}

// TestDoNotCancelledWhileHeld runs fn for several TTLs under the default
// watchdog: its context must stay live, Do must return nil and free the
// key.
func TestDoNotCancelledWhileHeld(t *testing.T) {
	l := newMem(t)
	key := locktest.UniqueKey(t)
	ttl := 300 * time.Millisecond
	err := distlock.Do(context.Background(), l, key, func(ctx context.Context, lease distlock.Lease) error {
		deadline := time.Now().Add(3 * ttl)
		for time.Now().Before(deadline) {
			if ctx.Err() != nil {
				t.Errorf("section cancelled while held: %v", context.Cause(ctx))
			}
			select {
			case <-ctx.Done():
				t.Fatalf("section cancelled while held: %v", context.Cause(ctx))
			case <-time.After(ttl / 5):
			}
		}
		mustBeHeld(t, l, key)
		return nil
	}, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	mustBeFree(t, l, key)
}

// TestDoWithoutAutoExtend checks that WithoutAutoExtend turns Do's
// watchdog off: the lease then expires after its TTL and fn's context is
// cancelled with a lost-lease cause.
func TestDoWithoutAutoExtend(t *testing.T) {
	l := newMem(t)
	key := locktest.UniqueKey(t)
	cause, err, _ := revokedSection(t, l, key, func() {}, distlock.WithTTL(20*time.Millisecond), distlock.WithoutAutoExtend())
	locktest.WantErr(t, cause, distlock.ErrLeaseLost)
	locktest.WantErr(t, err, distlock.ErrLeaseLost)
	mustBeFree(t, l, key)

	o, _ := distlock.DefaultOptions().Resolve(distlock.WithAutoExtend(time.Minute), distlock.WithoutAutoExtend())
	if o.AutoExtend || o.MaxHold != time.Minute {
		t.Fatalf("WithoutAutoExtend after WithAutoExtend: %+v", o)
	}
}

// TestDoReleasesOnPanic checks that a panicking fn frees the key and that
// the panic reaches the caller.
func TestDoReleasesOnPanic(t *testing.T) {
	l := newMem(t)
	key := locktest.UniqueKey(t)
	var got any
	func() {
		defer func() { got = recover() }()
		_ = distlock.Do(context.Background(), l, key, func(context.Context, distlock.Lease) error {
			panic("boom")
		})
	}()
	if got != "boom" {
		t.Fatalf("recovered %v, want the panic of fn", got)
	}
	mustBeFree(t, l, key)
}

// TestDoReleasesOnError checks that fn's error is returned as is and the
// key freed.
func TestDoReleasesOnError(t *testing.T) {
	l := newMem(t)
	key := locktest.UniqueKey(t)
	errFn := errors.New("fn failed")
	err := distlock.Do(context.Background(), l, key, func(context.Context, distlock.Lease) error { return errFn })
	if err != errFn {
		t.Fatalf("Do: %v, want fn's error", err)
	}
	mustBeFree(t, l, key)
}

// TestDoCallerCancelled checks that the caller's cancellation reaches fn
// and that the key is still released on a context that survives it.
func TestDoCallerCancelled(t *testing.T) {
	l := newMem(t)
	key := locktest.UniqueKey(t)
	ctx, cancel := context.WithCancel(context.Background())
	err := distlock.Do(ctx, l, key, func(ctx context.Context, _ distlock.Lease) error {
		cancel()
		<-ctx.Done()
		return context.Cause(ctx)
	})
	locktest.WantErr(t, err, context.Canceled)
	locktest.NotErr(t, err, distlock.ErrLeaseLost)
	mustBeFree(t, l, key)
}

// TestDoCancelledWhileWaiting checks that Do gives up when ctx ends before
// the key is free, without running fn, and that TryDo fails at once on a
// held key.
func TestDoCancelledWhileWaiting(t *testing.T) {
	l := newMem(t)
	key := locktest.UniqueKey(t)
	held := locktest.MustAcquire(t, l, key)
	defer locktest.MustRelease(t, held)
	var ran atomic.Bool
	fn := func(context.Context, distlock.Lease) error { ran.Store(true); return nil }

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err := distlock.Do(ctx, l, key, fn)
	locktest.WantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)

	err = distlock.TryDo(context.Background(), l, key, fn)
	locktest.WantErr(t, err, distlock.ErrNotAcquired)
	if ran.Load() {
		t.Fatal("fn ran without the lease")
	}
}

// TestTryDoFree checks that TryDo runs fn on a free key and frees it.
func TestTryDoFree(t *testing.T) {
	l := newMem(t)
	key := locktest.UniqueKey(t)
	err := distlock.TryDo(context.Background(), l, key, func(_ context.Context, lease distlock.Lease) error {
		mustBeHeld(t, l, key)
		return lease.Extend(context.Background(), time.Minute)
	})
	if err != nil {
		t.Fatalf("TryDo: %v", err)
	}
	mustBeFree(t, l, key)
}

// TestDoInvalid checks that bad input returns ErrInvalidArgument, without
// a panic and without running fn.
func TestDoInvalid(t *testing.T) {
	l := newMem(t)
	ctx := context.Background()
	fn := func(context.Context, distlock.Lease) error { t.Error("fn ran"); return nil }
	for name, do := range map[string]func(context.Context, distlock.Locker, string, func(context.Context, distlock.Lease) error, ...distlock.Option) error{
		"Do": distlock.Do, "TryDo": distlock.TryDo,
	} {
		locktest.WantErr(t, do(ctx, l, "k", nil), distlock.ErrInvalidArgument)
		locktest.WantErr(t, do(ctx, nil, "k", fn), distlock.ErrInvalidArgument)
		locktest.WantErr(t, do(ctx, l, "", fn), distlock.ErrInvalidArgument)
		locktest.WantErr(t, do(ctx, l, "k", fn, distlock.WithTTL(-1)), distlock.ErrInvalidArgument)
		t.Log(name, "ok")
	}
	mustBeFree(t, l, "k")
}

// newRedis starts a Redis server for t (or skips t without Docker) and
// returns a redissingle Locker on it and a client straight to the server.
func newRedis(t testing.TB) (*redissingle.Locker, *redis.Client) {
	t.Helper()
	testbed.RequireDocker(t)
	node := testbed.StartRedis(t, 1, testbed.RedisOptions{})[0]
	c := redis.NewClient(&redis.Options{
		Addr:                     node.Addr(),
		DisableIdentity:          true, // CLIENT SETINFO needs Redis 7.2
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { _ = c.Close() })
	l, err := redissingle.New(c, nil)
	if err != nil {
		t.Fatalf("redissingle.New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, node.Admin()
}

// TestDoCancelledOnRedisRevoke deletes the lock key on a real Redis while
// fn runs: the watchdog's next extension finds it gone, and fn's context
// is cancelled with a lost-lease cause within about a third of the TTL.
func TestDoCancelledOnRedisRevoke(t *testing.T) {
	l, admin := newRedis(t)
	key := locktest.UniqueKey(t)
	ttl := 600 * time.Millisecond
	var revoked time.Time
	cause, err, leaseErr := revokedSection(t, l, key, func() {
		if n, err := admin.Del(context.Background(), key).Result(); err != nil || n != 1 {
			t.Errorf("DEL %s: %d, %v", key, n, err)
		}
		revoked = time.Now()
	}, distlock.WithTTL(ttl))
	took := time.Since(revoked)
	locktest.WantErr(t, cause, distlock.ErrLeaseLost, leaseErr)
	locktest.WantErr(t, err, distlock.ErrLeaseLost)
	if took > ttl {
		t.Fatalf("fn's context cancelled %v after the DEL, want within the TTL %v", took, ttl)
	}
	t.Logf("cancelled %v after the DEL (TTL %v, extension every TTL/3)", took, ttl)
	if n := admin.Exists(context.Background(), key).Val(); n != 0 {
		t.Fatal("Do's release re-created the key")
	}
	mustBeFree(t, l, key)
}
