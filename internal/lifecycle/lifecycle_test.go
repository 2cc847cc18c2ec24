package lifecycle

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func newLifecycle() *Lifecycle {
	c := &Lifecycle{}
	c.Init()
	return c
}

func TestEnterRefusedAfterClose(t *testing.T) {
	c := newLifecycle()
	if !c.Enter() {
		t.Fatal("Enter on an open Lifecycle reported false")
	}
	c.Leave()
	if !c.Close(Hooks{}) {
		t.Fatal("first Close reported false")
	}
	if c.Enter() {
		t.Fatal("Enter after Close reported true")
	}
	if c.Go(func() { t.Error("Go ran f after Close") }) {
		t.Fatal("Go after Close reported true")
	}
	if !c.Closed() {
		t.Fatal("Closed reported false after Close")
	}
	if c.Close(Hooks{WakeLocked: func() { t.Error("second Close ran a hook") }}) {
		t.Fatal("second Close reported true")
	}
}

func TestCloseOrder(t *testing.T) {
	c := newLifecycle()
	var mu sync.Mutex
	var steps []string
	step := func(s string) { mu.Lock(); steps = append(steps, s); mu.Unlock() }

	entered := make(chan struct{})
	c.Go(func() {
		close(entered)
		<-c.Closing().Done()
		time.Sleep(10 * time.Millisecond) // Close must wait for this
		step("goroutine")
	})
	<-entered
	c.Close(Hooks{
		WakeLocked: func() {
			if !c.ClosedLocked() {
				t.Error("WakeLocked ran before the closed flag was set")
			}
			step("wake")
		},
		Shut: func() {
			if !c.Closing().Fired() {
				t.Error("Shut ran before the closing signal fired")
			}
			step("shut")
		},
		Release: func() { step("release") },
	})
	want := []string{"wake", "shut", "goroutine", "release"}
	if !slices.Equal(steps, want) {
		t.Fatalf("Close ran %v, want %v", steps, want)
	}
}

func TestCloseWaitsForCalls(t *testing.T) {
	c := newLifecycle()
	if !c.Enter() {
		t.Fatal("Enter reported false")
	}
	done := make(chan struct{})
	go func() { c.Close(Hooks{}); close(done) }()
	select {
	case <-done:
		t.Fatal("Close returned while a call was in flight")
	case <-time.After(20 * time.Millisecond):
	}
	c.Leave()
	<-done
}

// TestConcurrentCloseWaits: a Close that finds Close begun returns only
// once the first Close has finished, so every caller of Close may rely on
// the calls in flight having ended.
func TestConcurrentCloseWaits(t *testing.T) {
	c := newLifecycle()
	if !c.Enter() {
		t.Fatal("Enter reported false")
	}
	first := make(chan struct{})
	go func() { c.Close(Hooks{}); close(first) }()
	for !c.Closed() {
		time.Sleep(time.Millisecond)
	}
	second := make(chan struct{})
	go func() {
		if c.Close(Hooks{}) {
			t.Error("second Close reported true")
		}
		close(second)
	}()
	select {
	case <-second:
		t.Fatal("second Close returned while a call was in flight")
	case <-time.After(20 * time.Millisecond):
	}
	c.Leave()
	<-first
	<-second
}
