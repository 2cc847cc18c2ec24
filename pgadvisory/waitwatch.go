package pgadvisory

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// minProbe bounds how often a waiting Acquire checks the server.
const minProbe = 50 * time.Millisecond

// errCutOff: a waiting Acquire stopped hearing from the server.
var errCutOff = errors.New("the server stopped answering while the acquisition waited")

// watchWait guards a blocking Acquire whose statement waits on c: every
// ttl/3 it checks, on another connection, that the server still answers
// within ttl/2. A waiter cut off from the server (a partition that keeps
// its TCP connection up) hears nothing on its own connection, so without
// this it would wait forever and could be granted the key on a session
// nobody reads. If a check fails, it cuts c (the statement returns) and
// the returned stop func reports the failure. stop ends the watch and
// waits for it.
func (l *Locker) watchWait(c *conn, ttl time.Duration) (stop func() error) {
	interval, timeout := max(ttl/3, minProbe), max(ttl/2, minProbe)
	quit := make(chan struct{})
	finished := make(chan struct{})
	wctx, wcancel := context.WithCancel(context.Background()) // ends a probe in flight at stop
	var cut error
	// No goroutine until the first check is due: most waits end sooner.
	t := time.AfterFunc(interval, func() {
		defer close(finished)
		next := time.NewTimer(0)
		defer next.Stop()
		for {
			select {
			case <-quit:
				return
			case <-next.C:
			}
			ctx, cancel := context.WithTimeout(wctx, timeout)
			err := l.probe(ctx)
			cancel()
			select {
			case <-quit:
				return
			default:
			}
			if err != nil {
				cut = fmt.Errorf("%w: no answer within %v (%v)", errCutOff, timeout, err) // not %w: the probe's own causes must not make it retryable
				_ = c.PgConn().Conn().SetDeadline(past)
				return
			}
			next.Reset(interval)
		}
	})
	return func() error {
		wcancel()
		if t.Stop() {
			return nil
		}
		close(quit)
		<-finished
		return cut
	}
}

// probe runs SELECT 1 on a pooled connection within ctx; on another one
// if the server had ended the pooled session for idleness (see endedIdle).
func (l *Locker) probe(ctx context.Context) error {
	for stale := 0; ; stale++ {
		c, err := l.pool.get(ctx)
		if err != nil {
			return err
		}
		var one int
		c.sent = time.Now()
		if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
			l.pool.discard(ctx, c) // ended by stop: closes in the background
			if endedIdle(err) && stale < maxStale {
				continue
			}
			return err
		}
		l.pool.put(c)
		return nil
	}
}
