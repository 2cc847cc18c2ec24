package pgadvisory_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/pgadvisory"
)

// TestCloseDuringHeartbeat: Close while an auto-extended lease's heartbeat
// (default TTL) waits for its reply. Close stops automatic extension but
// must not release the lease: interrupting the heartbeat would close its
// connection and free the lock. The server's replies are dropped until
// after Close has begun, so the heartbeat is in flight; while Close waits,
// the key stays held, and once the reply arrives the lease is still held
// and Close returns (within the request timeout).
func TestCloseDuringHeartbeat(t *testing.T) {
	s := startPostgres(t)
	ctx := context.Background()
	holder, link := s.packetLocker(t, "holder", nil)
	other := s.locker(t, "other", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, holder, key, distlock.WithAutoExtend(time.Hour))
	defer func() { _ = ls.Release(ctx) }()
	pid := s.holderPID(t, key)
	before := queryStart(t, s, pid)
	mustFault(t, link.DropReplies)
	eventually(t, distlock.DefaultTTL, "the watchdog sent no heartbeat", func() bool { return queryStart(t, s, pid).After(before) })

	closed := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(closed)
		_ = holder.Close()
	}()
	time.Sleep(500 * time.Millisecond) // Close has stopped the watchdog, whose heartbeat waits
	_, err := other.TryAcquire(ctx, key)
	wantErr(t, err, distlock.ErrNotAcquired)
	if err := ls.Err(); err != nil {
		t.Fatalf("Close ended the lease during its heartbeat: %v", err)
	}
	mustFault(t, link.Heal) // the server's retransmitted reply arrives
	select {
	case <-closed:
		t.Logf("Close returned after %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(3 * pgadvisory.DefaultRequestTimeout):
		t.Fatalf("Close has not returned %v after it began", 3*pgadvisory.DefaultRequestTimeout)
	}
	if err := ls.Err(); err != nil {
		t.Fatalf("the lease was lost across Close: %v", err)
	}
	_, err = other.TryAcquire(ctx, key)
	wantErr(t, err, distlock.ErrNotAcquired)
	mustRelease(t, ls)
	mustRelease(t, mustAcquire(t, other, key))
}
