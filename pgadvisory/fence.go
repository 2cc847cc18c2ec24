package pgadvisory

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// past is a deadline that has passed: setting it interrupts a blocked read.
var past = time.Unix(1, 0)

// ensureFence makes sure the fence sequence exists, once per Locker: it
// looks it up and, if missing, creates it. Creation racing another
// client's is fine. If it cannot be created, the error is a
// *FenceSetupError.
func (l *Locker) ensureFence(ctx context.Context, c *conn) error {
	if l.fenceReady.Load() {
		return nil
	}
	l.fenceMu.Lock()
	defer l.fenceMu.Unlock()
	if l.fenceReady.Load() {
		return nil
	}
	var exists bool
	if err := request(ctx, l.opts.RequestTimeout, func(ctx context.Context) error {
		return c.QueryRow(ctx, l.sql.seqExists).Scan(&exists)
	}); err != nil {
		return wrap("look up the fence sequence", errors.Join(errNotQueued, err))
	}
	if !exists {
		if err := request(ctx, l.opts.RequestTimeout, func(ctx context.Context) error {
			_, err := c.Exec(ctx, l.sql.seqCreate)
			return err
		}); err != nil {
			pe, ok := pgError(err)
			switch {
			case ok && (pe.Code == codeDuplicateTable || pe.Code == codeUniqueViolation):
				// created concurrently by another client
			case ok:
				return l.fenceError(err)
			default:
				return wrap("create the fence sequence", errors.Join(errNotQueued, err))
			}
		}
	}
	l.fenceReady.Store(true)
	return nil
}

// fenceError explains a missing or forbidden fence sequence.
func (l *Locker) fenceError(err error) error {
	user := "<the locking role>"
	if u := l.pool.cfg.User; u != "" {
		user = u
	}
	seq := l.sql.seqIdent
	return &FenceSetupError{
		Sequence: seq,
		Fix:      fmt.Sprintf("CREATE SEQUENCE IF NOT EXISTS %s AS bigint; GRANT USAGE ON SEQUENCE %s TO %s;", seq, seq, user),
		Err:      err,
	}
}
