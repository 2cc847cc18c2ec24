package stop

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFireCancelsDerivedContexts checks that Fire, idempotent, cancels the
// contexts derived before it and those derived after.
func TestFireCancelsDerivedContexts(t *testing.T) {
	s := New()
	ctx, cancel := context.WithTimeout(s.Context(), time.Hour)
	defer cancel()
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	if err := child.Err(); err != nil || s.Fired() {
		t.Fatalf("before Fire: %v", err)
	}
	s.Fire()
	s.Fire() // idempotent
	select {
	case <-child.Done():
	case <-time.After(time.Second):
		t.Fatal("derived context not cancelled by Fire")
	}
	if !errors.Is(child.Err(), context.Canceled) || !s.Fired() {
		t.Fatalf("after Fire: %v", child.Err())
	}
	late, cancelLate := context.WithCancel(s.Context())
	defer cancelLate()
	select {
	case <-late.Done():
	case <-time.After(time.Second):
		t.Fatal("context derived after Fire not cancelled")
	}
}

// TestDerivingStartsNoGoroutine: thousands of live derived contexts cost
// hooks, not goroutines; cancelling a child unregisters its hook.
func TestDerivingStartsNoGoroutine(t *testing.T) {
	s := New()
	before := runtime.NumGoroutine()
	cancels := make([]context.CancelFunc, 1000)
	for i := range cancels {
		_, cancels[i] = context.WithTimeout(s.Context(), time.Hour)
	}
	if n := runtime.NumGoroutine(); n > before+5 {
		t.Fatalf("%d goroutines for 1000 derived contexts", n-before)
	}
	for _, c := range cancels {
		c()
	}
	s.mu.Lock()
	left := len(s.hooks)
	s.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d hooks left after every child was cancelled", left)
	}
	s.Fire()
}
