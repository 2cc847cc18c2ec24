package pgadvisory

import (
	"sync"
	"sync/atomic"
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
	next := func() int {
		select {
		case id := <-started:
			return id
		case <-time.After(5 * time.Second):
			t.Fatal("no run started within 5 s: the timer was not re-armed")
			return 0
		}
	}
	if got := next(); got != 3 {
		t.Fatalf("first run started: %d, want 3 (2 was taken back)", got)
	}
	if el := time.Since(begin); el > 250*time.Millisecond {
		t.Fatalf("the 40 ms run started after %v: the timer was not moved up", el)
	}
	if got := next(); got != 1 {
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

// TestStarterConcurrent: runs added and taken back from many goroutines
// while the timer fires: every run either starts (once) or is taken back,
// never both, and every run not taken back starts.
func TestStarterConcurrent(t *testing.T) {
	var st starter
	const workers, each = 8, 250
	type tracked struct {
		r         *monitorRun
		starts    atomic.Int32
		cancelled bool
	}
	all := make([][]*tracked, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				tr := &tracked{}
				done := make(chan struct{})
				tr.r = &monitorRun{at: time.Now().Add(time.Duration(i%4) * time.Millisecond), done: done,
					start: func() { tr.starts.Add(1); close(done) }}
				st.add(tr.r)
				if i%2 == 0 {
					if i%4 == 0 {
						time.Sleep(time.Duration(i%3) * time.Millisecond)
					}
					tr.cancelled = tr.r.cancel()
				}
				all[w] = append(all[w], tr)
			}
		}()
	}
	wg.Wait()
	deadline := time.After(5 * time.Second)
	for _, trs := range all {
		for _, tr := range trs {
			if tr.cancelled {
				continue
			}
			select {
			case <-tr.r.done:
			case <-deadline:
				t.Fatalf("a run that was not taken back did not start (state %d)", tr.r.state.Load())
			}
		}
	}
	time.Sleep(20 * time.Millisecond) // past every run's time: a taken-back run would have started
	cancelled := 0
	for _, trs := range all {
		for _, tr := range trs {
			n := tr.starts.Load()
			switch {
			case tr.cancelled && n != 0:
				t.Fatalf("a run taken back started %d times", n)
			case !tr.cancelled && n != 1:
				t.Fatalf("a run started %d times", n)
			}
			if tr.cancelled {
				cancelled++
			}
		}
	}
	if cancelled == 0 || cancelled == workers*each {
		t.Fatalf("%d of %d runs taken back: the test exercised only one path", cancelled, workers*each)
	}
}
