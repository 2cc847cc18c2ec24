package pgadvisory

import (
	"context"
	"fmt"
	"strconv"

	"github.com/distlock/distlock"
)

// LockTx waits for key's transaction-level lock (pg_advisory_xact_lock)
// inside the caller's transaction q (a pgx.Tx, or a connection inside
// BEGIN) and returns its fence, drawn in the same statement. The lock is
// released when the transaction commits or rolls back; there is no lease,
// TTL or Release. It needs no pinned connection, so it works through
// PgBouncer's transaction pooling. If ctx ends while waiting, the error
// matches distlock.ErrNotAcquired and ctx.Err(); the transaction is then
// aborted (roll it back). A full lock table gives a *LockTableFullError.
//
// The fence sequence must exist (a Locker creates it on its first
// acquisition; or run FenceSetupError.Fix). The fence is monotonic; like
// the sequence's other values it is durable once the transaction commits.
func (l *Locker) LockTx(ctx context.Context, q Querier, key string) (uint64, error) {
	return l.lockTx(ctx, q, key, true)
}

// TryLockTx is LockTx without waiting: if the key is held, the error
// matches distlock.ErrNotAcquired and the transaction goes on unharmed.
func (l *Locker) TryLockTx(ctx context.Context, q Querier, key string) (uint64, error) {
	return l.lockTx(ctx, q, key, false)
}

func (l *Locker) lockTx(ctx context.Context, q Querier, key string, wait bool) (uint64, error) {
	if err := distlock.CheckKey(key); err != nil {
		return 0, err
	}
	if q == nil {
		return 0, fmt.Errorf("%w: pgadvisory: nil transaction", distlock.ErrInvalidArgument)
	}
	if err := ended(ctx, nil); err != nil {
		return 0, err
	}
	stmt := l.sql.xtry
	if wait {
		stmt = l.sql.xwait
	}
	var got bool
	var fence int64
	var pid int32
	err := q.QueryRow(ctx, stmt, KeyID(l.opts.Namespace, key)).Scan(&got, &fence, &pid)
	switch {
	case err == nil && got:
		return uint64(fence), nil
	case err == nil:
		return 0, fmt.Errorf("%w: pgadvisory: key %q is held", distlock.ErrNotAcquired, key)
	}
	if pe, ok := pgError(err); ok {
		switch pe.Code {
		case codeOutOfSharedMemory:
			return 0, &LockTableFullError{Key: key, Err: pe}
		case codeInsufficientPriv, codeUndefinedTable:
			return 0, l.fenceError(pe)
		}
	}
	if ctx.Err() != nil {
		return 0, ended(ctx, err)
	}
	return 0, wrap("transaction lock "+strconv.Quote(key), err)
}
