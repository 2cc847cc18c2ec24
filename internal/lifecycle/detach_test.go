package lifecycle

import (
	"context"
	"errors"
	"testing"
)

// TestDetachReturnsAtContextEnd: a caller whose context ends gets
// ended(ctx) at once; the request's late result goes to abandoned, and
// Close waits for the request.
func TestDetachReturnsAtContextEnd(t *testing.T) {
	c := newLifecycle()
	release := make(chan struct{})
	got := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Detach(c, ctx, func(ctx context.Context) (int, error) {
		if ctx.Err() != nil {
			t.Error("the detached request's context was cancelled")
		}
		<-release
		return 7, nil
	}, func(v int, _ error) { got <- v }, context.Cause)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Detach = %v, want context.Canceled", err)
	}
	close(release)
	c.Close(Hooks{})
	select {
	case v := <-got:
		if v != 7 {
			t.Fatalf("abandoned got %d, want 7", v)
		}
	default:
		t.Fatal("Close returned before the abandoned request's clean-up ran")
	}
}

// TestDetachResult: a request that returns first gives its result; on a
// context that cannot end, or a closed Lifecycle, f runs inline.
func TestDetachResult(t *testing.T) {
	c := newLifecycle()
	f := func(context.Context) (int, error) { return 3, nil }
	abandoned := func(int, error) { t.Error("abandoned called for a delivered result") }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, ctx := range []context.Context{ctx, context.Background()} {
		if v, err := Detach(c, ctx, f, abandoned, context.Cause); v != 3 || err != nil {
			t.Fatalf("Detach = %d, %v; want 3, nil", v, err)
		}
	}
	c.Close(Hooks{})
	if v, err := Detach(c, ctx, f, abandoned, context.Cause); v != 3 || err != nil {
		t.Fatalf("Detach after Close = %d, %v; want 3, nil", v, err)
	}
}
