package retry

import (
	"context"
	"errors"
	"testing"

	"github.com/distlock/distlock"
)

func TestEnded(t *testing.T) {
	if err := Ended(context.Background(), errors.New("x")); err != nil {
		t.Fatalf("Ended on a live context = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	last := errors.New("node down")
	err := Ended(ctx, last)
	for _, want := range []error{distlock.ErrNotAcquired, context.Canceled, last} {
		if !errors.Is(err, want) {
			t.Errorf("Ended = %v, does not match %v", err, want)
		}
	}
	if err := Ended(ctx, nil); !errors.Is(err, distlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
		t.Errorf("Ended(nil last) = %v, want ErrNotAcquired and Canceled", err)
	}
}
