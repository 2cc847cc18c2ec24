package leader_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/leader"
	"github.com/distlock/distlock/memlock"
)

// runAsync starts c.Run(ctx) and returns its result channel.
func runAsync(ctx context.Context, c *leader.Candidate) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	return errc
}

// wantStopped waits for Run's error and checks it matches ErrNotAcquired
// and every target.
func wantStopped(t *testing.T, errc <-chan error, targets ...error) {
	t.Helper()
	select {
	case err := <-errc:
		locktest.WantErr(t, err, append([]error{distlock.ErrNotAcquired}, targets...)...)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5 s of its context's end")
	}
}

// TestCancelWhileLeading: ending Run's context ends the term (the work's
// context is cancelled with the same cause), releases the key and returns
// an error matching ErrNotAcquired, context.Canceled and the cause.
func TestCancelWhileLeading(t *testing.T) {
	l := memlock.New(nil)
	defer l.Close()
	key := locktest.UniqueKey(t)
	errStop := errors.New("shutting down")
	elected, cause := make(chan struct{}), make(chan error, 1)
	c, err := leader.NewCandidate(l, key, func(ctx context.Context, _ leader.Term) error {
		close(elected)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	errc := runAsync(ctx, c)
	<-elected
	cancel(errStop)
	wantStopped(t, errc, context.Canceled, errStop)
	locktest.WantErr(t, <-cause, errStop)
	if c.IsLeader() {
		t.Fatal("IsLeader after Run returned")
	}
	locktest.MustRelease(t, locktest.MustAcquire(t, l, key)) // the key was released
}

// TestCancelWhileCampaigning: Run waiting for a key held elsewhere returns
// when its context ends, without ever running the work.
func TestCancelWhileCampaigning(t *testing.T) {
	l := memlock.New(nil)
	defer l.Close()
	key := locktest.UniqueKey(t)
	held := locktest.MustAcquire(t, l, key)
	defer locktest.MustRelease(t, held)
	c, err := leader.NewCandidate(l, key, func(context.Context, leader.Term) error {
		t.Error("the work ran while another holder had the key")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	wantStopped(t, runAsync(ctx, c), context.DeadlineExceeded)
}

// TestRunOnClosedLocker: a closed Locker ends Run with ErrClosed instead
// of campaigning forever.
func TestRunOnClosedLocker(t *testing.T) {
	l := memlock.New(nil)
	_ = l.Close()
	c, err := leader.NewCandidate(l, "k", func(context.Context, leader.Term) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	err = c.Run(context.Background())
	locktest.WantErr(t, err, distlock.ErrClosed)
	locktest.NotErr(t, err, distlock.ErrNotAcquired)
}

// TestRunTwice: a second Run of a running Candidate is refused.
func TestRunTwice(t *testing.T) {
	l := memlock.New(nil)
	defer l.Close()
	elected := make(chan struct{})
	c, err := leader.NewCandidate(l, locktest.UniqueKey(t), func(ctx context.Context, _ leader.Term) error {
		close(elected)
		<-ctx.Done()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := runAsync(ctx, c)
	<-elected
	locktest.WantErr(t, c.Run(context.Background()), distlock.ErrInvalidArgument)
	cancel()
	wantStopped(t, errc, context.Canceled)
}

// TestNewCandidateRejects: bad arguments fail at construction.
func TestNewCandidateRejects(t *testing.T) {
	l := memlock.New(nil)
	defer l.Close()
	work := func(context.Context, leader.Term) error { return nil }
	for _, tc := range []struct {
		name   string
		locker distlock.Locker
		key    string
		work   leader.Work
		opt    leader.Option
	}{
		{"nil Locker", nil, "k", work, nil},
		{"empty key", l, "", work, nil},
		{"nil work", l, "k", nil, nil},
		{"zero backoff", l, "k", work, leader.WithBackoff(0, time.Second)},
		{"max < min", l, "k", work, leader.WithBackoff(time.Second, time.Millisecond)},
		{"negative resign delay", l, "k", work, leader.WithResignDelay(-1)},
		{"zero max term", l, "k", work, leader.WithMaxTerm(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := leader.NewCandidate(tc.locker, tc.key, tc.work, tc.opt)
			locktest.WantErr(t, err, distlock.ErrInvalidArgument)
		})
	}
}

// TestWorkPanicReleases: a panic in the work goes on out of Run after the
// key is released and the term reported ended.
func TestWorkPanicReleases(t *testing.T) {
	l := memlock.New(nil)
	defer l.Close()
	key := locktest.UniqueKey(t)
	var ends []leader.Event
	c, err := leader.NewCandidate(l, key, func(context.Context, leader.Term) error { panic("work bug") },
		leader.WithObserver(func(ev leader.Event) {
			if ev.Kind != leader.Elected {
				ends = append(ends, ev)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the work's panic did not go on")
			}
		}()
		_ = c.Run(context.Background())
	}()
	if len(ends) != 1 || ends[0].Kind != leader.SteppedDown || ends[0].Err == nil {
		t.Fatalf("end events %v, want one SteppedDown with an error", ends)
	}
	locktest.MustRelease(t, locktest.MustAcquire(t, l, key))
}
