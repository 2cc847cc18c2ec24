package pgadvisory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
)

var _ distlock.Inspector = (*Locker)(nil)

// lockStateSQL selects one row per session (or prepared transaction)
// holding or waiting for an int8 advisory lock of the current database,
// from one reading of pg_locks: the lock's id as text k (bytewise
// collation, for List's order), granted, the holder's pid (NULL for a
// prepared transaction) and the prepared transaction's gid. A prepared
// transaction's locks keep its virtual transaction id, under which it
// also holds the lock on its own transaction id.
const lockStateSQL = `WITH lk AS (SELECT * FROM pg_locks)
SELECT ((l.classid::bigint << 32) | l.objid::bigint)::text COLLATE "C" AS k, l.granted, l.pid, p.gid
FROM lk l
LEFT JOIN lk x ON l.pid IS NULL AND x.pid IS NULL AND x.locktype = 'transactionid' AND x.mode = 'ExclusiveLock'
AND x.granted AND x.virtualtransaction = l.virtualtransaction
LEFT JOIN pg_prepared_xacts p ON p.transaction = x.transactionid
WHERE l.locktype = 'advisory' AND l.objsubid = 1
AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`

// inspectSQL is lockStateSQL for lock $1 (int8).
const inspectSQL = `SELECT k, granted, pid, gid FROM (` + lockStateSQL + `) s WHERE k = $1::bigint::text ORDER BY pid NULLS FIRST`

// listSQL is lockStateSQL for the first $3 held locks whose k starts with
// $1 and sorts after $2, bytewise, with their waiters.
const listSQL = `WITH s AS (` + lockStateSQL + `),
keys AS (SELECT DISTINCT k FROM s WHERE granted AND starts_with(k, $1) AND k > $2 ORDER BY k LIMIT $3)
SELECT s.k, s.granted, s.pid, s.gid FROM s JOIN keys USING (k) ORDER BY s.k, s.pid NULLS FIRST`

// stillHoldsSQL is true while the session s.pid holds lock $1: read again
// just before that session is terminated, so that a session which let
// the lock go after the first reading (and may, pooled, hold another
// key's lease by now) is spared.
const stillHoldsSQL = `EXISTS (SELECT 1 FROM pg_locks r WHERE r.pid = s.pid AND r.locktype = 'advisory'
AND r.objsubid = 1 AND r.granted AND ((r.classid::bigint << 32) | r.objid::bigint) = $1::bigint
AND r.database = (SELECT oid FROM pg_database WHERE datname = current_database()))`

// forceSQL ends every holder of lock $1 but the calling session: it
// terminates each holding session, waiting up to $2 ms for it to exit,
// and returns each holder's pid (NULL for a prepared transaction, whose
// gid it returns for ROLLBACK PREPARED) and whether it is gone. A
// backend that exited before it could be signalled is gone too, and so is
// one that no longer holds the lock when it is read again (stillHoldsSQL).
const forceSQL = `SELECT pid, gid, CASE WHEN pid IS NULL THEN false WHEN NOT ` + stillHoldsSQL + ` THEN true
WHEN pg_terminate_backend(pid, $2::bigint) THEN true
ELSE NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = s.pid) END
FROM (` + lockStateSQL + `) s, LATERAL (SELECT pg_sleep(CASE WHEN s.k IS NULL THEN 0 ELSE $3::float8 END)) pause
WHERE k = $1::bigint::text AND granted AND pid IS DISTINCT FROM pg_backend_pid()`

// testForcePause is the pause, in seconds, of forceSQL between its first
// reading of pg_locks and the termination of each holder: 0 outside
// tests.
var testForcePause float64

// Inspect implements distlock.Inspector: one read of pg_locks for key's
// advisory lock (KeyID under the Locker's namespace) on a pooled
// connection, bounded by Options.RequestTimeout whatever ctx (a
// connection left in doubt is then closed, in up to about a second more),
// as List and ForceRelease are. See Inspection in the
// package documentation for what LockInfo holds. An empty key returns an
// error matching distlock.ErrInvalidArgument; a closed Locker
// distlock.ErrClosed; a server that cannot be reached or does not answer
// in time distlock.ErrUnavailable.
func (l *Locker) Inspect(ctx context.Context, key string) (distlock.LockInfo, error) {
	if err := distlock.CheckKey(key); err != nil {
		return distlock.LockInfo{}, err
	}
	return l.inspect(ctx, key, l.KeyID(key))
}

// InspectID is Inspect on the integer advisory lock id, as AcquireID
// takes it and List names it: LockInfo.Key is the decimal id. Its errors
// are Inspect's.
func (l *Locker) InspectID(ctx context.Context, id int64) (distlock.LockInfo, error) {
	return l.inspect(ctx, strconv.FormatInt(id, 10), id)
}

func (l *Locker) inspect(ctx context.Context, key string, id int64) (distlock.LockInfo, error) {
	var info distlock.LockInfo
	err := l.operate(ctx, "inspect "+strconv.Quote(key), func(ctx context.Context, c *conn) error {
		rows, err := queryLocks(ctx, c, inspectSQL, id)
		info = lockInfo(key, rows)
		return err
	})
	return info, err
}

// List implements distlock.Inspector as far as the server knows lock
// names: it lists the int8 advisory locks held in the Locker's database,
// each under its decimal id (the Key AcquireID gives a lease), prefix and
// page.Cursor applying to that id. A string key is hashed into its id
// (KeyID) and cannot be recovered: it is listed under Locker.KeyID(key),
// and so is every int8 advisory lock of the database, whatever its
// namespace or whoever took it. Each entry is filled as Inspect fills it.
// Locks held only in the (int4, int4) space of pg_advisory_lock(int,
// int) are not listed. A prefix with anything but digits and '-' matches
// no id and lists nothing. Errors as for Inspect; a page.Limit outside
// 0..distlock.MaxListLimit, or a page.Cursor that is not a lock id,
// returns an error matching distlock.ErrInvalidArgument.
func (l *Locker) List(ctx context.Context, prefix string, page distlock.Page) (distlock.Listing, error) {
	limit, err := page.LimitOrDefault()
	if err != nil {
		return distlock.Listing{}, err
	}
	if page.Cursor != "" && !isLockID(page.Cursor) {
		return distlock.Listing{}, fmt.Errorf("%w: pgadvisory: list cursor %q is no lock id: pass Listing.Next of the previous page",
			distlock.ErrInvalidArgument, clip(page.Cursor))
	}
	if strings.Trim(prefix, "-0123456789") != "" {
		return distlock.Listing{}, nil // no lock id starts with it
	}
	var out distlock.Listing
	err = l.operate(ctx, "list", func(ctx context.Context, c *conn) error {
		rows, err := queryLocks(ctx, c, listSQL, prefix, page.Cursor, limit+1)
		if err != nil {
			return err
		}
		out = listing(rows, limit)
		return nil
	})
	return out, err
}

// ForceRelease implements distlock.Inspector: it terminates every server
// session holding key's advisory lock (pg_terminate_backend, waiting up
// to half of Options.RequestTimeout for each to exit; Postgres 14 or
// later, as the idle_session_timeout the TTL rests on) and rolls back a
// prepared transaction holding it (ROLLBACK PREPARED), in one request
// bounded by Options.RequestTimeout. Terminating a session frees every
// lock it holds and aborts what it was doing: a lease of this package
// holds one lock per session, but a LockTx caller's transaction or an
// application's own session loses all of its locks and work. The evicted
// lease learns that it is lost when its client reads the closed
// connection (the lease's monitor reads it; Done then fires): within
// milliseconds while the holder's process runs, at its validity's end if
// it is paused or cut off. The server frees the lock as the session
// exits, so the next holder may be granted before the evicted lease
// learns: a resource that must refuse it checks fences. Its Extend and
// Release return distlock.ErrLeaseLost. Fences stay monotonic: the
// fence sequence is untouched. It reports whether the key was held.
//
// The caller's role needs the right to terminate the holder's session
// (superuser, membership in the holder's role, or pg_signal_backend; a
// superuser's session only by a superuser) or, for a prepared
// transaction, to be its owner or a superuser; without it the error
// matches distlock.ErrNotSupported and names the privilege. A session
// that does not exit in time gives an error matching
// distlock.ErrUnavailable. Other errors as for Inspect.
//
// In one statement, the holder is read, read again just before its
// session is terminated, and terminated: a session that let the lock go
// after the first reading (its pooled connection perhaps holding another
// key's lease by then) is spared. Only a release and a new acquisition
// on that session within the microseconds between the second reading and
// the termination would make another lease the one evicted.
func (l *Locker) ForceRelease(ctx context.Context, key string) (bool, error) {
	if err := distlock.CheckKey(key); err != nil {
		return false, err
	}
	return l.forceRelease(ctx, key, l.KeyID(key))
}

// ForceReleaseID is ForceRelease on the integer advisory lock id, as
// AcquireID takes it and List names it. Its errors are ForceRelease's.
func (l *Locker) ForceReleaseID(ctx context.Context, id int64) (bool, error) {
	return l.forceRelease(ctx, strconv.FormatInt(id, 10), id)
}

func (l *Locker) forceRelease(ctx context.Context, key string, id int64) (bool, error) {
	held := false
	wait := max(l.opts.RequestTimeout/2, time.Millisecond).Milliseconds()
	err := l.operate(ctx, "force release "+strconv.Quote(key), func(ctx context.Context, c *conn) error {
		var alive []string
		var gids []string
		rows, _ := c.Query(ctx, forceSQL, id, wait, testForcePause)
		var pid *int32
		var gid *string
		var gone bool
		_, err := pgx.ForEachRow(rows, []any{&pid, &gid, &gone}, func() error {
			held = true
			switch {
			case pid == nil && gid != nil:
				gids = append(gids, *gid)
			case pid != nil && !gone:
				alive = append(alive, strconv.Itoa(int(*pid)))
			}
			return nil
		})
		if err != nil {
			return l.privilegeError(err, "terminate the session holding "+strconv.Quote(key),
				"grant it pg_signal_backend, or connect as a superuser (a superuser's session needs a superuser)")
		}
		for _, g := range gids {
			if _, err := c.Exec(ctx, "ROLLBACK PREPARED "+quoteEscaped(g)); err != nil {
				if pe, ok := pgError(err); ok && pe.Code == codeUndefinedObject {
					continue // committed or rolled back meanwhile
				}
				return l.privilegeError(err, "roll back the prepared transaction holding "+strconv.Quote(key),
					"run ROLLBACK PREPARED as its owner or a superuser")
			}
		}
		if len(alive) > 0 {
			return fmt.Errorf("%w: pgadvisory: force release %q: backend %s signalled but still running after %d ms",
				distlock.ErrUnavailable, key, strings.Join(alive, ", "), wait)
		}
		return nil
	})
	return held, err
}

// errPrivilege marks the server's refusal for lack of a privilege, for
// operate to report as it is.
type errPrivilege struct{ error }

// privilegeError turns the server's refusal of what (SQLSTATE 42501) into
// an error matching distlock.ErrNotSupported that says how to grant it;
// other errors are returned as they are.
func (l *Locker) privilegeError(err error, what, fix string) error {
	pe, ok := pgError(err)
	if !ok || pe.Code != codeInsufficientPriv {
		return err
	}
	role := l.pool.cfg.User
	return errPrivilege{fmt.Errorf("%w: pgadvisory: the role %q may not %s: %s (server: %w)",
		distlock.ErrNotSupported, role, what, fix, pe)}
}

// operate runs do on a pooled connection as one request bounded by
// Options.RequestTimeout (and ended by Close), for an operator's call op.
// The connection goes back to the pool unless do fails. Errors match
// distlock.ErrUnavailable (and ctx's error if ctx ended), except
// distlock.ErrClosed and the errors of privilegeError.
func (l *Locker) operate(ctx context.Context, op string, do func(context.Context, *conn) error) error {
	if !l.lc.Enter() {
		return distlock.ErrClosed
	}
	defer l.lc.Leave()
	ctx, cancel := l.callContext(ctx)
	defer cancel()
	c, err := l.pool.get(ctx)
	if err != nil {
		if l.lc.Closed() {
			return errors.Join(distlock.ErrClosed, err)
		}
		return err
	}
	c.sent = time.Now()
	err = request(ctx, l.opts.RequestTimeout, func(ctx context.Context) error { return do(ctx, c) })
	if err == nil {
		l.pool.put(c)
		return nil
	}
	l.pool.discard(ctx, c)
	var pe errPrivilege
	switch {
	case errors.As(err, &pe):
		return pe.error
	case errors.Is(err, distlock.ErrUnavailable):
	case l.lc.Closed():
		return errors.Join(distlock.ErrClosed, err)
	default:
		err = wrap(op, err)
	}
	if ctx.Err() != nil {
		err = errors.Join(err, ctxError(ctx))
	}
	return err
}

// codeUndefinedObject is the SQLSTATE of ROLLBACK PREPARED for a
// transaction that is no longer prepared.
const codeUndefinedObject = "42704"

// lockRow is one row of lockStateSQL.
type lockRow struct {
	k       string
	granted bool
	pid     *int32
	gid     *string
}

// queryLocks runs a query of lockStateSQL's rows.
func queryLocks(ctx context.Context, c *conn, sql string, args ...any) ([]lockRow, error) {
	rows, _ := c.Query(ctx, sql, args...)
	var out []lockRow
	var r lockRow
	_, err := pgx.ForEachRow(rows, []any{&r.k, &r.granted, &r.pid, &r.gid}, func() error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// lockInfo is key's LockInfo from its rows: Held if a row is granted,
// Holder the holders' ids ("pid:<pid>", "prepared:<gid>") joined with
// commas (several only for shared locks), Waiters the rows not granted,
// Leak a prepared transaction's hold.
func lockInfo(key string, rows []lockRow) distlock.LockInfo {
	info := distlock.LockInfo{Key: key}
	var holders, leaks []string
	for _, r := range rows {
		if !r.granted {
			info.Waiters++
			continue
		}
		info.Held = true
		switch {
		case r.pid != nil:
			holders = append(holders, "pid:"+strconv.Itoa(int(*r.pid)))
		case r.gid != nil:
			holders = append(holders, "prepared:"+*r.gid)
			leaks = append(leaks, fmt.Sprintf("held by prepared transaction %q, which has no session and never expires "+
				"(COMMIT PREPARED or ROLLBACK PREPARED it; ForceRelease rolls it back)", *r.gid))
		default: // finished between the two reads of the statement
			holders = append(holders, "prepared")
		}
	}
	info.Holder = strings.Join(holders, ",")
	info.Leak = strings.Join(leaks, "; ")
	return info
}

// listing groups rows (in key order) into at most limit LockInfos; rows
// of a further key mean another page follows.
func listing(rows []lockRow, limit int) distlock.Listing {
	var out distlock.Listing
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].k == rows[i].k {
			j++
		}
		if len(out.Locks) == limit {
			out.Next = out.Locks[limit-1].Key
			break
		}
		out.Locks = append(out.Locks, lockInfo(rows[i].k, rows[i:j]))
		i = j
	}
	return out
}

// quoteEscaped quotes s as an escape string literal (E'...'), in which
// backslashes are escapes whatever standard_conforming_strings says, so
// that a prepared transaction's gid, chosen by whoever prepared it, is
// one literal and nothing more.
func quoteEscaped(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return "E'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// isLockID reports whether s is the decimal form of an int8 lock id, as
// List names locks.
func isLockID(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}
