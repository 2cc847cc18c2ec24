package validity

import (
	"strings"
	"testing"
	"time"
)

// TestDriftIsTheRedlockReference checks DefaultDrift's factors: TTL x 1%
// + 2 ms.
func TestDriftIsTheRedlockReference(t *testing.T) {
	if d := DefaultDrift(10 * time.Second); d != 102*time.Millisecond {
		t.Fatalf("drift for 10s = %v, want 100ms + 2ms", d)
	}
	if d := Drift(time.Second, 0, 0); d != 0 {
		t.Fatalf("zero drift = %v", d)
	}
}

// TestUntilCountsFromBeforeTheRequest checks that Until subtracts the time
// elapsed since start and the drift, and keeps the monotonic reading.
func TestUntilCountsFromBeforeTheRequest(t *testing.T) {
	start := time.Now()
	time.Sleep(20 * time.Millisecond) // the request in flight
	vu := Until(start, 100*time.Millisecond, DefaultDrift(100*time.Millisecond))
	left := Remaining(vu)
	if left > 80*time.Millisecond-3*time.Millisecond+time.Millisecond || left <= 0 {
		t.Fatalf("left %v: elapsed time or drift not subtracted", left)
	}
	// The monotonic reading survives: a wall-clock jump cannot move it.
	if !strings.Contains(vu.String(), " m=") {
		t.Fatal("validity lost its monotonic clock reading")
	}
}
