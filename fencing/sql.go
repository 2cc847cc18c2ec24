package fencing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrNoRow: a fenced Update found no row for its key.
var ErrNoRow = errors.New("fencing: no such row")

// SQLDB is what a SQLGuard runs its statements on. DatabaseSQL adapts a
// database/sql handle; pgadvisory.FencingDB adapts a pgx connection,
// transaction or pool.
type SQLDB interface {
	// Exec runs a statement and returns the number of rows it affected.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// QueryRow runs a query and scans its first row into dest; found is
	// false (and err nil) if it returned no row.
	QueryRow(ctx context.Context, query string, args []any, dest ...any) (found bool, err error)
}

// StdDB is the part of *sql.DB, *sql.Tx and *sql.Conn that DatabaseSQL
// uses.
type StdDB interface {
	// ExecContext is (*sql.DB).ExecContext.
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	// QueryRowContext is (*sql.DB).QueryRowContext.
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// DatabaseSQL adapts a database/sql handle to SQLDB. Its errors are the
// handle's, unchanged.
func DatabaseSQL(db StdDB) SQLDB { return stdDB{db} }

// stdDB is the SQLDB of a database/sql handle.
type stdDB struct{ db StdDB }

// Exec runs query with ExecContext and returns RowsAffected.
func (s stdDB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := s.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// QueryRow scans the first row into dest; sql.ErrNoRows is found false.
func (s stdDB) QueryRow(ctx context.Context, query string, args []any, dest ...any) (bool, error) {
	err := s.db.QueryRowContext(ctx, query, args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// Placeholders is how a SQL dialect writes statement parameters.
type Placeholders int

const (
	// Dollar: $1, $2, ... (Postgres, CockroachDB). The default.
	Dollar Placeholders = iota
	// Question: ?, ?, ... (MySQL, SQLite).
	Question
)

// SQLGuard fences the rows of a SQL table: each row stores, next to its
// data, the fence of the last write, and a write is applied only if its
// fence is at least that high, in the same statement (UPDATE ... WHERE
// fence <= $n), so a holder that was paused or cut off past its lease
// cannot overwrite what the next holder wrote, however late its statement
// arrives. Equal fences pass: fences are unique per lease, so only the
// same holder carries the same fence, and it may write again.
//
// Table, KeyColumn, FenceColumn and ValueColumn are inserted into the
// statements verbatim: they must be trusted identifiers (quote them
// yourself if needed). FenceColumn must hold 64-bit integers (bigint) and
// start at 0 for new rows. The zero value of Placeholders is Dollar.
type SQLGuard struct {
	// Table is the table of the fenced rows, KeyColumn the column naming
	// a row's key and FenceColumn the bigint column holding the fence of
	// its last write. All three are required.
	Table, KeyColumn, FenceColumn string
	// ValueColumn is the column Write and Read use; Update does not need it.
	ValueColumn string
	// Placeholders is the SQL dialect's parameter style; default Dollar.
	Placeholders Placeholders
}

// Update runs "UPDATE Table SET <set>, FenceColumn = fence WHERE KeyColumn =
// key AND FenceColumn <= fence". set is an assignment list whose
// parameters are args, numbered from 1 (or ?). It returns nil if the row
// was updated, a *StaleFenceError (matching ErrStaleFence) with the
// stored fence if that is higher, and ErrNoRow if there is no such row.
func (g SQLGuard) Update(ctx context.Context, db SQLDB, key string, fence uint64, set string, args ...any) error {
	f, err := fenceArg(fence)
	if err != nil {
		return err
	}
	n := int64(len(args))
	q := fmt.Sprintf("UPDATE %s SET %s, %s = %s WHERE %s = %s AND %s <= %s",
		g.Table, set, g.FenceColumn, g.ph(int(n)+1), g.KeyColumn, g.ph(int(n)+2), g.FenceColumn, g.ph(int(n)+3))
	all := append(append(make([]any, 0, n+3), args...), f, key, f)
	n, err = db.Exec(ctx, q, all...)
	if err != nil {
		return fmt.Errorf("fencing: fenced update of %q: %w", key, err)
	}
	return g.outcome(ctx, db, n, key, fence, true)
}

// Write stores value for key with fence, inserting the row if it is
// missing, unless the stored fence is higher (then a *StaleFenceError).
// It is one statement, INSERT ... ON CONFLICT (KeyColumn) DO UPDATE ...
// WHERE, as Postgres and SQLite write it; KeyColumn must be the table's
// primary key or have a unique index.
func (g SQLGuard) Write(ctx context.Context, db SQLDB, key string, fence uint64, value any) error {
	f, err := fenceArg(fence)
	if err != nil {
		return err
	}
	q := fmt.Sprintf("INSERT INTO %[1]s (%[2]s, %[3]s, %[4]s) VALUES (%[5]s, %[6]s, %[7]s) "+
		"ON CONFLICT (%[2]s) DO UPDATE SET %[3]s = EXCLUDED.%[3]s, %[4]s = EXCLUDED.%[4]s WHERE %[1]s.%[3]s <= EXCLUDED.%[3]s",
		g.Table, g.KeyColumn, g.FenceColumn, g.ValueColumn, g.ph(1), g.ph(2), g.ph(3))
	n, err := db.Exec(ctx, q, key, f, value)
	if err != nil {
		return fmt.Errorf("fencing: fenced write of %q: %w", key, err)
	}
	return g.outcome(ctx, db, n, key, fence, false)
}

// Read scans key's value into dest and returns its fence. A missing row
// gives ErrNoRow.
func (g SQLGuard) Read(ctx context.Context, db SQLDB, key string, dest any) (uint64, error) {
	q := fmt.Sprintf("SELECT %s, %s FROM %s WHERE %s = %s", g.ValueColumn, g.FenceColumn, g.Table, g.KeyColumn, g.ph(1))
	var f int64
	found, err := db.QueryRow(ctx, q, []any{key}, dest, &f)
	switch {
	case err != nil:
		return 0, fmt.Errorf("fencing: read %q: %w", key, err)
	case !found:
		return 0, fmt.Errorf("%w: %q", ErrNoRow, key)
	}
	return uint64(f), nil
}

// outcome turns a statement's row count into the result: one row is
// success; none means the stored fence is higher (or, for an update, the
// row is missing), which a second query tells apart.
func (g SQLGuard) outcome(ctx context.Context, db SQLDB, n int64, key string, fence uint64, update bool) error {
	if n > 0 {
		return nil
	}
	var highest int64
	q := fmt.Sprintf("SELECT %s FROM %s WHERE %s = %s", g.FenceColumn, g.Table, g.KeyColumn, g.ph(1))
	switch found, err := db.QueryRow(ctx, q, []any{key}, &highest); {
	case err != nil:
		return fmt.Errorf("fencing: %q: write refused, reading its fence: %w", key, err)
	case !found && update:
		return fmt.Errorf("%w: %q", ErrNoRow, key)
	case !found:
		return fmt.Errorf("fencing: %q: write refused but no row found", key)
	case uint64(highest) == fence:
		// MySQL counts a row whose values did not change as unaffected:
		// the row already holds this fence and the write is applied.
		return nil
	}
	return &StaleFenceError{Key: key, Fence: fence, Highest: uint64(highest)}
}

// ph renders parameter i (from 1) in the guard's placeholder style.
func (g SQLGuard) ph(i int) string {
	if g.Placeholders == Question {
		return "?"
	}
	return "$" + strconv.Itoa(i)
}

// fenceArg converts a fence to the int64 a bigint column holds.
func fenceArg(fence uint64) (int64, error) {
	if fence == 0 {
		return 0, &StaleFenceError{Fence: 0}
	}
	if fence > math.MaxInt64 {
		return 0, fmt.Errorf("fencing: fence %d does not fit a bigint column", fence)
	}
	return int64(fence), nil
}

// CreateTableSQL returns a CREATE TABLE IF NOT EXISTS statement for a
// key-value table this guard can Write and Read: KeyColumn text primary
// key, FenceColumn bigint (default 0), ValueColumn of valueType.
func (g SQLGuard) CreateTableSQL(valueType string) string {
	return fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (%s text PRIMARY KEY, %s bigint NOT NULL DEFAULT 0, %s %s)",
		g.Table, g.KeyColumn, g.FenceColumn, g.ValueColumn, strings.TrimSpace(valueType))
}
