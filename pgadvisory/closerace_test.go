package pgadvisory_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/pgadvisory"
)

// TestCloseRacingAGrant: Close begins just as a blocking Acquire's lock
// statement returns granted. Close interrupts waiting connections with a
// past deadline, which such a grant would carry into its lease (failing
// its first Extend or Release). The Acquire must instead return
// ErrClosed, with the lock freed, and Close must return.
func TestCloseRacingAGrant(t *testing.T) {
	s := startPostgres(t)
	l := s.locker(t, "closing", nil)
	key := uniqueKey(t)
	closed := make(chan error, 1)
	var once sync.Once
	pgadvisory.SetHookAfterWait(t, func() {
		once.Do(func() {
			go func() { closed <- l.Close() }()
			for deadline := time.Now().Add(10 * time.Second); !pgadvisory.Closing(l); {
				if time.Now().After(deadline) {
					t.Error("Close never began")
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ls, err := l.Acquire(ctx, key)
	if err == nil {
		_ = ls.Release(context.Background())
		t.Fatal("Acquire granted a lease while its Locker was closing (its connection carries Close's past deadline)")
	}
	if !errors.Is(err, distlock.ErrClosed) {
		t.Fatalf("Acquire: %v; want ErrClosed", err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return")
	}
	// The grant was given back: another Locker takes the key at once.
	other := s.locker(t, "other", nil)
	got, err := other.TryAcquire(context.Background(), key)
	if err != nil {
		t.Fatalf("the racing grant was not freed: %v", err)
	}
	_ = got.Release(context.Background())
}
