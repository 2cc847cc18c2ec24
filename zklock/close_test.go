package zklock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/zklock"
)

// testClose: Close wakes a queued waiter with ErrClosed; closing the
// holder's Locker fires Done with ErrLeaseLost and ErrClosed and deletes
// its nodes; later calls return ErrClosed; a second Close returns nil.
func testClose(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	a, err := zklock.New(e.Addrs("a"), withTick(nil))
	if err != nil {
		t.Fatal(err)
	}
	b, err := zklock.New(e.Addrs("b"), withTick(nil))
	if err != nil {
		t.Fatal(err)
	}
	ls := mustAcquire(t, a, key)
	waited := make(chan error, 1)
	go func() {
		_, err := b.Acquire(context.Background(), key)
		waited <- err
	}()
	eventually(t, 5*time.Second, "waiter did not queue", func() bool { return len(e.lockNodes(t, key)) == 2 })
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, <-waited, distlock.ErrClosed)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ls.Done():
	case <-time.After(time.Second):
		t.Fatal("Done did not fire at Close")
	}
	wantErr(t, ls.Err(), distlock.ErrLeaseLost, distlock.ErrClosed)
	eventually(t, 5*time.Second, "nodes left after Close", func() bool { return len(e.lockNodes(t, key)) == 0 })
	_, err = a.TryAcquire(context.Background(), key)
	wantErr(t, err, distlock.ErrClosed)
	_, err = a.Acquire(context.Background(), key)
	wantErr(t, err, distlock.ErrClosed)
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// testCloseDuringExtension: Close while a watchdog is in the middle of an
// extension cancels the extension's context, returns, and ends the lease
// (its node deleted). The extension's request registers as a call in
// flight, so Close must not hold the Locker's mutex while it waits for
// the watchdogs.
func testCloseDuringExtension(t *testing.T, e *ensemble) {
	key := uniqueKey(t)
	const ttl = 15 * time.Second // validity 9 s: an extension every 3 s, with 6 s left
	l, err := zklock.New(e.Addrs("x"), withTick(nil))
	if err != nil {
		t.Fatal(err)
	}
	closing := false
	defer func() {
		if !closing { // a Close that hung would hang here too
			_ = l.Close()
		}
	}()
	entered := make(chan struct{})
	ended := make(chan error, 1)
	var once sync.Once
	restore := zklock.SetHookBeforeExtend(func(ctx context.Context) {
		once.Do(func() { // the first extension waits until Close stops it
			close(entered)
			<-ctx.Done()
			ended <- ctx.Err()
		})
	})
	ls := mustAcquire(t, l, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))
	select {
	case <-entered:
	case <-time.After(ttl):
		restore()
		t.Fatal("the watchdog did not extend")
	}
	closing = true
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(20 * time.Second):
		// The hook stays set: the hung watchdog read it without a
		// happens-before edge to this goroutine.
		t.Fatal("Close did not return within 20 s while a watchdog was extending")
	}
	restore() // Close joined the watchdog
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("the extension's context ended with %v: Close did not meet the extension in flight", err)
	}
	wantErr(t, ls.Err(), distlock.ErrLeaseLost)
	eventually(t, 5*time.Second, "nodes left after Close", func() bool { return len(e.lockNodes(t, key)) == 0 })
}
