package pgadvisory_test

import (
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/pgadvisory"
)

// TestCloseDuringSweep: Close while the pool's sweep is resetting the idle
// timeout of a connection whose server does not answer (black-holed).
// Close interrupts the reset and waits at most closeTimeout (1 s) for the
// interrupted connection's clean-up, not for the server.
func TestCloseDuringSweep(t *testing.T) {
	s := startPostgres(t)
	l := s.locker(t, "a", nil)
	key := uniqueKey(t)
	resets := pgadvisory.SweepResets(t)
	// TTL 4 s: the sweep resets after 2 s idle, the server would end the
	// session at 4 s (which would also end the reset).
	mustRelease(t, mustAcquire(t, l, key, distlock.WithTTL(4*time.Second)))
	link := s.node.Link("a")
	link.Blackhole()
	defer link.Heal()
	select {
	case <-resets:
	case <-time.After(10 * time.Second):
		t.Fatal("the sweep never reset the idle connection")
	}
	start := time.Now()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	took := time.Since(start)
	t.Logf("Close took %v", took)
	if took > 1500*time.Millisecond {
		t.Fatalf("Close took %v with a sweep's reset unanswered", took)
	}
}
