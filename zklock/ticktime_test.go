package zklock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/zklock"
)

// testTickTime: a lease counts on at most 2/3 of the negotiated session
// timeout minus half a tick (a server relays session activity to the
// leader only on its ticks) and the drift, and a session timeout that
// leaves nothing after that is refused with ErrInvalidArgument naming the
// fix.
func testTickTime(t *testing.T, e *ensemble) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const ttl = time.Second // the session timeout too: 4 ticks of the testbed
	l := e.locker(t, "tick", nil)
	ls, err := l.TryAcquire(ctx, uniqueKey(t), distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	returned := time.Now()
	defer ls.Release(ctx)
	limit := ttl*2/3 - testbedTick/2 // 541 ms; SafeFraction alone allows 600 ms
	if got := ls.ValidUntil().Sub(returned); got > limit {
		t.Fatalf("validity %v after the return, want at most %v (2/3 x timeout - tick/2)", got, limit)
	}

	// The default tick time (2 s) leaves a 1 s session no validity.
	short, err := zklock.New(e.Addrs("tick-default"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	_, err = short.TryAcquire(ctx, uniqueKey(t), distlock.WithTTL(ttl))
	wantErr(t, err, distlock.ErrInvalidArgument)
	if !strings.Contains(err.Error(), "TickTime") {
		t.Fatalf("error %q does not name Options.TickTime", err)
	}
	actx, acancel := context.WithTimeout(ctx, 2*time.Second)
	defer acancel()
	_, err = short.Acquire(actx, uniqueKey(t), distlock.WithTTL(ttl))
	wantErr(t, err, distlock.ErrInvalidArgument)
}
