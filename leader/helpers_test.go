package leader_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/leader"
)

// TestMain fails the package if a test leaves a goroutine running (a
// campaign, a term's watcher, a watchdog). The Docker client's idle HTTP
// connections and go-redis's dial back-off are not ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// seen is one event and the index of the candidate that reported it.
type seen struct {
	who int
	leader.Event
}

// group is several candidates for one key, each running in a goroutine.
type group struct {
	t      *testing.T
	cands  []*leader.Candidate
	cancel []context.CancelFunc
	errs   []chan error

	mu     sync.Mutex
	events []seen // guarded by mu
}

// startGroup starts one candidate per Locker, running work(i) as
// candidate i, and stops them all when t ends.
func startGroup(t *testing.T, lockers []distlock.Locker, key string, work func(i int) leader.Work, opts ...leader.Option) *group {
	t.Helper()
	g := &group{t: t}
	for i, l := range lockers {
		obs := leader.WithObserver(func(ev leader.Event) {
			g.mu.Lock()
			g.events = append(g.events, seen{i, ev})
			g.mu.Unlock()
		})
		c, err := leader.NewCandidate(l, key, work(i), append([]leader.Option{obs}, opts...)...)
		if err != nil {
			t.Fatalf("NewCandidate: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- c.Run(ctx) }()
		g.cands, g.cancel, g.errs = append(g.cands, c), append(g.cancel, cancel), append(g.errs, errc)
	}
	t.Cleanup(func() { g.stopAll() })
	return g
}

// stop cancels candidate i's Run and returns its error, within 10 s.
func (g *group) stop(i int) error {
	g.t.Helper()
	g.cancel[i]()
	return g.wait(i, 10*time.Second)
}

// wait returns candidate i's Run error, failing t if Run does not return
// within d.
func (g *group) wait(i int, d time.Duration) error {
	g.t.Helper()
	select {
	case err := <-g.errs[i]:
		g.errs[i] <- err // keep it for a later stop
		return err
	case <-time.After(d):
		g.t.Fatalf("candidate %d: Run did not return within %v", i, d)
		return nil
	}
}

// stopAll stops every candidate.
func (g *group) stopAll() {
	for i := range g.cands {
		g.stop(i)
	}
}

// all returns a copy of the events so far.
func (g *group) all() []seen {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]seen(nil), g.events...)
}

// of returns the events of kind k so far.
func (g *group) of(k leader.Kind) []seen {
	var out []seen
	for _, ev := range g.all() {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// waitFor waits up to d until there are n events of kind k, and returns
// them.
func (g *group) waitFor(k leader.Kind, n int, d time.Duration) []seen {
	g.t.Helper()
	deadline := time.Now().Add(d)
	for {
		if evs := g.of(k); len(evs) >= n {
			return evs
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("after %v: %d %s events, want %d; events: %v", d, len(g.of(k)), k, n, g.all())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// wantIncreasing fails t unless the fences of evs strictly increase.
func wantIncreasing(t *testing.T, evs []seen) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		if evs[i].Term.Fence <= evs[i-1].Term.Fence {
			t.Fatalf("term %d: fence %d after %d, want strictly increasing", i, evs[i].Term.Fence, evs[i-1].Term.Fence)
		}
	}
}

// blockUntilEnd is work that leads until its context is cancelled, and
// records the cause in causes[i].
func blockUntilEnd(causes []chan error) func(i int) leader.Work {
	return func(i int) leader.Work {
		return func(ctx context.Context, _ leader.Term) error {
			<-ctx.Done()
			select {
			case causes[i] <- context.Cause(ctx):
			default:
			}
			return nil
		}
	}
}

// recvCause returns the cause blockUntilEnd recorded, failing t if the
// work's context is not cancelled within 5 s.
func recvCause(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("the work's context was not cancelled within 5 s")
		return nil
	}
}
