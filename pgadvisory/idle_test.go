package pgadvisory_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/pgadvisory"
)

// TestReusedIdleTimeout: a released connection keeps its lease's idle
// timeout in the pool. The next lease on it with the same TTL ("kept")
// does not set it again; one with a shorter TTL ("changed", after a 1 min
// lease) sets its own. Either way the server frees that holder within its
// TTL when it is cut off.
func TestReusedIdleTimeout(t *testing.T) {
	ttl := time.Second
	for _, tc := range []struct {
		name     string
		firstTTL time.Duration
	}{
		{"kept", ttl},
		{"changed", time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startPostgres(t)
			l, other := s.locker(t, "a", nil), s.locker(t, "b", nil)
			key := uniqueKey(t)
			first := mustAcquire(t, l, key, distlock.WithTTL(tc.firstTTL), distlock.WithAutoExtend(time.Hour))
			pid := s.holderPID(t, key)
			mustRelease(t, first)
			ls := mustAcquire(t, l, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))
			if again := s.holderPID(t, key); again != pid {
				t.Fatalf("the second lease is on backend %d, not the pooled %d", again, pid)
			}
			cutHolder(t, s, "a", other, key, ls, ttl)
		})
	}
}

// TestIdleConnectionOutlivesTTL: a pooled connection idle for longer than
// the TTL it kept is not ended by the server (the pool resets its idle
// timeout in time) and serves the next lease.
func TestIdleConnectionOutlivesTTL(t *testing.T) {
	s := startPostgres(t)
	l := s.locker(t, "a", nil)
	key := uniqueKey(t)
	// The sweep resets the timeout at TTL - 2*margin of idle time (1 s) and
	// the server would end the session at the TTL (2 s): a second of slack
	// for a late timer on a loaded machine.
	ttl := 2 * time.Second
	ls := mustAcquire(t, l, key, distlock.WithTTL(ttl))
	pid := s.holderPID(t, key)
	mustRelease(t, ls)
	time.Sleep(5 * ttl / 2)
	var n int
	if err := s.admin(t).QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("the pooled session %d ended while idle %v with a TTL of %v", pid, 5*ttl/2, ttl)
	}
	ls = mustAcquire(t, l, key, distlock.WithTTL(ttl))
	if again := s.holderPID(t, key); again != pid {
		t.Fatalf("the next lease is on backend %d, not the pooled %d", again, pid)
	}
	mustRelease(t, ls)
}

// TestPooledConnectionEndedForIdleness: the server ends a pooled session
// for idleness after the pool handed it out but before the lock statement
// reached it (a client paused past the pool's margin). The statement never
// ran, so TryAcquire and Acquire send it again on another connection
// instead of failing, and the validity still counts from before the first
// request (within one TTL of the call: property AV in scenario S10 of
// docs/conformance.md).
func TestPooledConnectionEndedForIdleness(t *testing.T) {
	s := startPostgres(t)
	l := s.locker(t, "a", nil)
	key := uniqueKey(t)
	ttl := time.Second // drift 12 ms, less than the pause before the retry
	for _, try := range []bool{true, false} {
		first := mustAcquire(t, l, key)
		pid := s.holderPID(t, key)
		mustRelease(t, first) // leaves pid's connection idle in the pool
		pgadvisory.EndIdleAfterGet(t)
		var ls distlock.Lease
		var err error
		call := time.Now()
		if try {
			ls, err = l.TryAcquire(context.Background(), key, distlock.WithTTL(ttl))
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			ls, err = l.Acquire(ctx, key, distlock.WithTTL(ttl))
			cancel()
		}
		if err != nil {
			t.Fatalf("try %v: a statement the server never ran was not sent again: %v", try, err)
		}
		if again := s.holderPID(t, key); again == pid {
			t.Fatalf("try %v: the lease is on backend %d, which the server ended", try, pid)
		}
		if over := ls.ValidUntil().Sub(call.Add(ttl)); over > 0 {
			t.Fatalf("try %v: ValidUntil %v beyond one TTL from the call (counted from the retry)", try, over)
		}
		mustRelease(t, ls)
	}
}

// TestEveryPooledConnectionEndedForIdleness: an acquisition that finds one
// pooled session after another ended for idleness starts again MaxStale
// times. TryAcquire then gives up with an error that says so
// (ErrUnavailable), not that its outcome is unknown: a session the server
// ended holds nothing, and the key is free for the next caller. A
// blocking Acquire waits the retry delay, as for any unavailability, and
// goes on.
func TestEveryPooledConnectionEndedForIdleness(t *testing.T) {
	s := startPostgres(t)
	l, other := s.locker(t, "a", nil), s.locker(t, "b", nil)
	key := uniqueKey(t)
	n := pgadvisory.MaxStale + 1

	left := pgadvisory.EndIdleAfterGets(t, n)
	_, err := l.TryAcquire(context.Background(), key)
	wantErr(t, err, distlock.ErrUnavailable)
	want := fmt.Sprintf("ended %d pooled sessions for idleness", n)
	if msg := err.Error(); !strings.Contains(msg, want) || strings.Contains(msg, "outcome unknown") {
		t.Fatalf("TryAcquire: error %q, want one that says it %s, not that the outcome is unknown", msg, want)
	}
	if k := left(); k != 0 {
		t.Fatalf("TryAcquire gave up with %d idle-ended sessions still to come, want after all %d", k, n)
	}
	mustRelease(t, mustAcquire(t, other, key))

	left = pgadvisory.EndIdleAfterGets(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ls, err := l.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("Acquire after %d idle-ended sessions: %v, want it to go on after the retry delay", n, err)
	}
	if k := left(); k != 0 {
		t.Fatalf("Acquire returned with %d idle-ended sessions still to come", k)
	}
	mustRelease(t, ls)
}
