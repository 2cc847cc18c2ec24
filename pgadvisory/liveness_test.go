package pgadvisory_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/pgadvisory"
	"github.com/distlock/distlock/testbed"
)

const defaultBound = pgadvisory.DefaultRequestTimeout

// closeBound bounds Close with a request in flight: it ends the request at
// once, then closes its connection (at most about 2 s on a cut link), well
// before the request timeout would have ended it.
const closeBound = 3 * time.Second

// TestCutServerCallsReturn: with the server's packets dropped both ways
// (no RST, no FIN) and context.Background(), every call returns within its
// bound, the request timeout (default, or configured): TryAcquire on a
// pooled connection and on a new one, Extend and Release of a held lease
// (default TTL) with ErrUnavailable; Close, with a TryAcquire or a
// blocking Acquire in flight, interrupts it (ErrClosed) at once. A call
// still running at 3x its bound is reported as hung.
func TestCutServerCallsReturn(t *testing.T) {
	s := startPostgres(t)
	ctx := context.Background()
	cases := []struct {
		name string
		opts *pgadvisory.Options
		// run sets up on a healthy link, cuts it, and makes the call.
		run   func(t *testing.T, l *pgadvisory.Locker, cut func()) error
		want  []error
		bound time.Duration
	}{
		{"TryAcquire pooled", nil, func(t *testing.T, l *pgadvisory.Locker, cut func()) error {
			mustRelease(t, mustAcquire(t, l, uniqueKey(t)))
			cut()
			_, err := l.TryAcquire(ctx, uniqueKey(t))
			return err
		}, []error{distlock.ErrUnavailable}, defaultBound},
		{"TryAcquire connect", nil, func(t *testing.T, l *pgadvisory.Locker, cut func()) error {
			cut()
			_, err := l.TryAcquire(ctx, uniqueKey(t))
			return err
		}, []error{distlock.ErrUnavailable}, defaultBound},
		{"Extend", nil, func(t *testing.T, l *pgadvisory.Locker, cut func()) error {
			ls := mustAcquire(t, l, uniqueKey(t))
			t.Cleanup(func() { _ = ls.Release(ctx) })
			cut()
			err := ls.Extend(ctx, distlock.DefaultTTL)
			if ls.Err() == nil {
				t.Errorf("the lease is held after its heartbeat failed: %v", err)
			}
			return err
		}, []error{distlock.ErrUnavailable, distlock.ErrLeaseLost}, defaultBound},
		{"Release", nil, func(t *testing.T, l *pgadvisory.Locker, cut func()) error {
			ls := mustAcquire(t, l, uniqueKey(t))
			cut()
			return ls.Release(ctx)
		}, []error{distlock.ErrUnavailable}, defaultBound},
		{"Close during TryAcquire connect", nil, func(t *testing.T, l *pgadvisory.Locker, cut func()) error {
			cut()
			return closeDuring(t, l, func() error {
				_, err := l.TryAcquire(ctx, uniqueKey(t))
				return err
			})
		}, []error{distlock.ErrClosed}, closeBound},
		{"Close during TryAcquire pooled", nil, func(t *testing.T, l *pgadvisory.Locker, cut func()) error {
			mustRelease(t, mustAcquire(t, l, uniqueKey(t)))
			cut()
			return closeDuring(t, l, func() error {
				_, err := l.TryAcquire(ctx, uniqueKey(t))
				return err
			})
		}, []error{distlock.ErrClosed}, closeBound},
		{"Close during Acquire connect", nil, func(t *testing.T, l *pgadvisory.Locker, cut func()) error {
			cut()
			return closeDuring(t, l, func() error {
				_, err := l.Acquire(ctx, uniqueKey(t))
				return err
			})
		}, []error{distlock.ErrClosed}, closeBound},
		{"TryAcquire pooled, configured timeout", &pgadvisory.Options{RequestTimeout: time.Second}, func(t *testing.T, l *pgadvisory.Locker, cut func()) error {
			mustRelease(t, mustAcquire(t, l, uniqueKey(t)))
			cut()
			_, err := l.TryAcquire(ctx, uniqueKey(t))
			return err
		}, []error{distlock.ErrUnavailable}, time.Second},
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for i, tc := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(tc.name, func(t *testing.T) {
				l, link := s.packetLocker(t, "live"+string(rune('a'+i)), tc.opts)
				var start time.Time
				cut := func() {
					mustFault(t, link.Cut)
					start = time.Now()
				}
				err := returnsWithin(t, 3*tc.bound, link, func() error { return tc.run(t, l, cut) })
				took := time.Since(start)
				wantErr(t, err, tc.want...)
				t.Logf("returned %v after the cut: %v", took.Round(time.Millisecond), err)
			})
		}()
	}
}

// closeDuring starts call, closes l once call is under way, and returns
// call's error. Close itself must return within closeBound.
func closeDuring(t *testing.T, l *pgadvisory.Locker, call func() error) error {
	t.Helper()
	res := make(chan error, 1)
	go func() { res <- call() }()
	time.Sleep(300 * time.Millisecond) // the call's request is in flight
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = l.Close()
	}()
	select {
	case <-closed:
		t.Logf("Close returned after %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(closeBound):
		t.Errorf("Close has not returned %v after it was called, with a call in flight", closeBound)
		<-closed
	}
	return <-res
}

// returnsWithin runs call and returns its error. If call has not returned
// within limit, it fails t as hung, heals link so that call can end, and
// waits for it.
func returnsWithin(t *testing.T, limit time.Duration, link *testbed.PacketLink, call func() error) error {
	t.Helper()
	res := make(chan error, 1)
	go func() { res <- call() }()
	select {
	case err := <-res:
		return err
	case <-time.After(limit):
	}
	t.Errorf("hung: the call has not returned %v after it started", limit)
	mustFault(t, link.Heal)
	select {
	case err := <-res:
		return err
	case <-time.After(3 * time.Minute):
		t.Fatal("the call has not returned 3 minutes after the link was healed")
		return errors.New("hung")
	}
}

// TestInterruptedRequestLeavesNoGoroutine: pgx closes the connection of
// an interrupted request in the background (a cancel request on a new
// connection, then Terminate, then draining the socket), which on a cut
// link would last 15 s. The Locker waits for that work and bounds it:
// when TryAcquire, Extend or Release returns after its request timeout
// ended the request, no goroutine of it is left.
func TestInterruptedRequestLeavesNoGoroutine(t *testing.T) {
	s := startPostgres(t)
	ctx := context.Background()
	l, link := s.packetLocker(t, "interrupted", &pgadvisory.Options{RequestTimeout: 500 * time.Millisecond})
	extended := mustAcquire(t, l, uniqueKey(t))
	released := mustAcquire(t, l, uniqueKey(t))
	mustRelease(t, mustAcquire(t, l, uniqueKey(t))) // a pooled connection
	mustFault(t, link.Cut)
	for name, call := range map[string]func() error{
		"TryAcquire": func() error { _, err := l.TryAcquire(ctx, uniqueKey(t)); return err },
		"Extend":     func() error { return extended.Extend(ctx, distlock.DefaultTTL) },
		"Release":    func() error { return released.Release(ctx) },
	} {
		start := time.Now()
		err := call()
		wantErr(t, err, distlock.ErrUnavailable)
		if n := goroutinesIn("pgconn.(*PgConn).asyncClose"); n > 0 {
			t.Errorf("%s returned after %v with pgx still closing its connection in %d goroutine(s)", name, time.Since(start).Round(time.Millisecond), n)
		} else {
			t.Logf("%s returned after %v", name, time.Since(start).Round(time.Millisecond))
		}
	}
}

// goroutinesIn counts the goroutines whose stack mentions fn.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			count++
		}
	}
	return count
}
