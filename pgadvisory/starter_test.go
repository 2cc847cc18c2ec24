package pgadvisory

import (
	"testing"
	"time"
)

// newRun returns a run due after d whose start closes its done channel
// and reports on started.
func newRun(d time.Duration, started chan<- int, id int) *monitorRun {
	done := make(chan struct{})
	return &monitorRun{at: time.Now().Add(d), done: done, start: func() {
		defer close(done)
		started <- id
	}}
}

// TestStarter: runs start when due, in any arming order, from the one
// timer; a run taken back before it is due never starts; a run armed
// sooner than the timer moves the timer up.
func TestStarter(t *testing.T) {
	var st starter
	started := make(chan int, 8)
	late := newRun(300*time.Millisecond, started, 1)
	st.add(late)
	cancelled := newRun(20*time.Millisecond, started, 2)
	st.add(cancelled) // sooner than the timer: moves it up
	soon := newRun(40*time.Millisecond, started, 3)
	st.add(soon)
	if !cancelled.cancel() {
		t.Fatal("a pending run could not be taken back")
	}
	begin := time.Now()
	if got := <-started; got != 3 {
		t.Fatalf("first run started: %d, want 3 (2 was taken back)", got)
	}
	if el := time.Since(begin); el > 250*time.Millisecond {
		t.Fatalf("the 40 ms run started after %v: the timer was not moved up", el)
	}
	if got := <-started; got != 1 {
		t.Fatalf("second run started: %d, want 1", got)
	}
	if el := time.Since(begin); el < 200*time.Millisecond {
		t.Fatalf("the 300 ms run started after %v", el)
	}
	if late.cancel() {
		t.Fatal("a started run was taken back")
	}
	<-late.done
	<-soon.done
	select {
	case id := <-started:
		t.Fatalf("run %d started after it was taken back", id)
	case <-time.After(50 * time.Millisecond):
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.queue) != 0 || !st.at.IsZero() {
		t.Fatalf("starter not idle after its runs: queue %d, armed for %v", len(st.queue), st.at)
	}
}
