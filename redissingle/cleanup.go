package redissingle

import (
	"context"
	"errors"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/retry"
)

// cleanupTimeout is the deadline of each clean-up request.
const cleanupTimeout = time.Second

// cleanup removes entry from k's queue and releases k if token holds it
// (cancel.lua), on a goroutine of l's lifecycle: at once, then with backoff
// while the server is unavailable, until it succeeds, the Locker closes,
// or ttl has passed (a key we might hold has expired by then). Each try is
// bounded by cleanupTimeout if the client honours context deadlines
// (ContextTimeoutEnabled), else by its read timeout. Once Close has begun,
// it makes its one try on the caller's goroutine, which Close waits for
// (every caller is a call or goroutine of the lifecycle), so that Close
// returns after the clean-up of every waiter it woke.
func (l *Locker) cleanup(k keySet, token, entry string, ttl time.Duration) {
	l.cleanupThen(k, token, entry, ttl, nil)
}

// cleanupThen is cleanup, calling done (if not nil) once the script has
// run.
func (l *Locker) cleanupThen(k keySet, token, entry string, ttl time.Duration, done func()) {
	run := func() {
		until := time.Now().Add(ttl)
		b := retry.Backoff{Min: 20 * time.Millisecond, Max: time.Second}
		for {
			ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			err := l.scripts.cancel.Run(ctx, l.client, k.all(), token, entry).Err()
			cancel()
			if err == nil && done != nil {
				done()
			}
			if err == nil || !errors.Is(wrap("clean-up", err), distlock.ErrUnavailable) || time.Now().Add(b.Next()).After(until) {
				return
			}
			if !b.Wait(l.lc.Closing().Done()) {
				return
			}
		}
	}
	if !l.lc.Go(run) {
		run()
	}
}
