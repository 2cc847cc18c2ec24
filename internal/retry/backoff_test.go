package retry_test

import (
	"testing"
	"time"

	"github.com/distlock/distlock/internal/retry"
)

func TestBackoffDoublesUpToMaxAndResets(t *testing.T) {
	b := retry.Backoff{Min: time.Millisecond, Max: 5 * time.Millisecond}
	var got []time.Duration
	for range 5 {
		got = append(got, b.Next())
		if !b.Wait(nil) {
			t.Fatal("Wait returned false without a stop")
		}
	}
	want := []time.Duration{1, 2, 4, 5, 5}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("delays %v, want %v ms", got, want)
		}
	}
	b.Reset()
	if b.Next() != time.Millisecond {
		t.Fatalf("after Reset, Next = %v, want Min", b.Next())
	}
}

func TestBackoffWaitSleeps(t *testing.T) {
	b := retry.Backoff{Min: 20 * time.Millisecond, Max: time.Second}
	start := time.Now()
	b.Wait(nil)
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("Wait returned after %v, want >= Min", d)
	}
}

func TestBackoffStopEndsWait(t *testing.T) {
	b := retry.Backoff{Min: time.Hour, Max: time.Hour}
	stop := make(chan struct{})
	close(stop)
	done := make(chan bool)
	go func() { done <- b.Wait(stop) }()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("Wait reported a full sleep after stop closed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return when stop closed")
	}
	if b.Next() != time.Hour {
		t.Fatalf("a stopped Wait changed the delay: Next = %v", b.Next())
	}
}
