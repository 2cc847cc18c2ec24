package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/leader"
	"github.com/distlock/distlock/memlock"
)

// A work that returns as soon as its context ends must not turn a
// resignation or a loss into SteppedDown: the end is reported by why the
// context ended, whichever of the work's return and the cancellation
// watcher comes first.
func TestEndKindWhenWorkReturnsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(c *leader.Candidate, space *memlock.Locker)
		want leader.Kind
	}{
		{"resign", func(c *leader.Candidate, _ *memlock.Locker) { _ = c.Resign(context.Background()) }, leader.Resigned},
		{"revoke", func(_ *leader.Candidate, space *memlock.Locker) { space.Revoke("k") }, leader.Lost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 300 {
				space := memlock.New(nil)
				l := space.NewHandle()
				ev := make(chan leader.Event, 8)
				c, err := leader.NewCandidate(l, "k", func(ctx context.Context, _ leader.Term) error { <-ctx.Done(); return nil },
					leader.WithObserver(func(e leader.Event) { ev <- e }), leader.WithResignDelay(time.Hour))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- c.Run(ctx) }()
				<-ev // elected
				tc.end(c, space)
				e := <-ev
				cancel()
				<-done
				l.Close()
				space.Close()
				if e.Kind != tc.want {
					t.Fatalf("iteration %d: term ended %q (%v), want %q", i, e.Kind, e.Err, tc.want)
				}
			}
		})
	}
}
