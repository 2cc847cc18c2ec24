package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// TestLostLeaseValidityEnds checks that a lease lost before its validity
// ran out stops claiming exclusion: ValidUntil is no later than the moment
// of the loss, as after a revocation another client may hold the key.
func TestLostLeaseValidityEnds(t *testing.T) {
	l := newLease(&scripted{}, opts(time.Hour, false, time.Hour))
	l.Lose(errors.New("session ended"))
	if now := time.Now(); l.ValidUntil().After(now) {
		t.Fatalf("lost lease: ValidUntil %v ahead of now", l.ValidUntil().Sub(now))
	}
}

// TestReleasedLeaseValidityEnds: a released lease claims no exclusion.
func TestReleasedLeaseValidityEnds(t *testing.T) {
	l := newLease(&scripted{}, opts(time.Hour, false, time.Hour))
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if now := time.Now(); l.ValidUntil().After(now) {
		t.Fatalf("released lease: ValidUntil %v ahead of now", l.ValidUntil().Sub(now))
	}
}

// releaseRacer deletes the key on Release, which makes a caller's
// extension in flight find the key gone; Release returns only after that
// extension has returned, so the extension reports the loss before
// Release ends the lease.
type releaseRacer struct {
	inExtend, released, extendDone chan struct{}
}

func (d *releaseRacer) Extend(ctx context.Context, ttl time.Duration) (time.Time, error) {
	close(d.inExtend)
	<-d.released
	defer close(d.extendDone)
	return time.Time{}, distlock.ErrLeaseLost // the key is gone: we deleted it
}

func (d *releaseRacer) Release(context.Context) error {
	close(d.released)
	<-d.extendDone
	time.Sleep(20 * time.Millisecond) // let the extension act on its answer
	return nil
}

// TestReleaseWinsOverRacingExtend: a Release whose delete makes a
// concurrent Extend find the key gone ends the lease released, not lost.
func TestReleaseWinsOverRacingExtend(t *testing.T) {
	d := &releaseRacer{inExtend: make(chan struct{}), released: make(chan struct{}), extendDone: make(chan struct{})}
	l := newLease(d, opts(time.Hour, false, time.Hour))
	extended := make(chan error, 1)
	go func() { extended <- l.Extend(context.Background(), time.Hour) }()
	<-d.inExtend
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := <-extended; !errors.Is(err, distlock.ErrLeaseLost) && !errors.Is(err, distlock.ErrReleased) {
		t.Fatalf("racing Extend: %v", err)
	}
	if err := l.Err(); !errors.Is(err, distlock.ErrReleased) || errors.Is(err, distlock.ErrLeaseLost) {
		t.Fatalf("Err after Release = %v, want ErrReleased", err)
	}
}

// stuckExtend is a driver whose extensions never get an answer.
type stuckExtend struct{ scripted }

func (d *stuckExtend) Extend(ctx context.Context, ttl time.Duration) (time.Time, error) {
	<-ctx.Done()
	return time.Time{}, ctx.Err()
}

// TestExtendBoundedByValidity: an Extend with context.Background() whose
// server never answers returns once the lease's validity has passed (the
// lease is lost then, so a later answer could not help).
func TestExtendBoundedByValidity(t *testing.T) {
	l := newLease(&stuckExtend{}, opts(100*time.Millisecond, false, time.Hour))
	done := make(chan error, 1)
	go func() { done <- l.Extend(context.Background(), time.Hour) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("an unanswered extension succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Extend still blocked 5 s after a 100 ms validity ended")
	}
	<-l.Done()
}
