package fencing

import (
	"context"
	"fmt"
	"math"
)

// SQLPairGuard is SQLGuard for fence pairs (see Pair), for a table whose
// rows are written by a fleet migrating between two lock backends: each
// row keeps the highest old side (FromColumn) and the highest new side
// (ToColumn) accepted, and an update is applied only if each side the
// pair carries is at least the stored one, in the same statement.
//
// To switch a table guarded by SQLGuard, add the new side's column
// (ALTER TABLE t ADD COLUMN fence_to bigint NOT NULL DEFAULT 0) and use
// the existing fence column as FromColumn: the old side then starts at
// the highest single fence accepted, as the migration requires.
// Identifiers are inserted verbatim, as in SQLGuard.
type SQLPairGuard struct {
	// Table, KeyColumn, FromColumn and ToColumn are required; both fence
	// columns are bigint, 0 for a new row.
	Table, KeyColumn, FromColumn, ToColumn string
	// Placeholders is the SQL dialect's parameter style; default Dollar.
	Placeholders Placeholders
}

// Update runs "UPDATE Table SET <set>, <each side raised to p's> WHERE
// KeyColumn = key AND <each side p carries is not below the stored
// one>". set is an assignment list whose parameters are args, numbered
// from 1 (or ?). It returns nil if the row was updated, a
// *StalePairError (matching ErrStaleFence) with the stored sides if p is
// stale (always for the zero Pair), and ErrNoRow if there is no such row.
func (g SQLPairGuard) Update(ctx context.Context, db SQLDB, key string, p Pair, set string, args ...any) error {
	if p == (Pair{}) {
		return &StalePairError{Key: key}
	}
	if p.From > math.MaxInt64 || p.To > math.MaxInt64 {
		return fmt.Errorf("fencing: fence pair %v does not fit bigint columns", p)
	}
	f, t := int64(p.From), int64(p.To)
	all := append([]any{}, args...)
	ph := func(v any) string { all = append(all, v); return SQLGuard{Placeholders: g.Placeholders}.ph(len(all)) }
	raise := func(col string, v int64) string {
		return fmt.Sprintf("%s = CASE WHEN %s > %s THEN %s ELSE %s END", col, col, ph(v), col, ph(v))
	}
	admits := func(col string, v int64) string {
		if v == 0 {
			return "TRUE"
		}
		return fmt.Sprintf("%s <= %s", col, ph(v))
	}
	q := fmt.Sprintf("UPDATE %s SET %s, %s, %s", g.Table, set, raise(g.FromColumn, f), raise(g.ToColumn, t))
	q += fmt.Sprintf(" WHERE %s = %s AND %s AND %s", g.KeyColumn, ph(key), admits(g.FromColumn, f), admits(g.ToColumn, t))
	n, err := db.Exec(ctx, q, all...)
	if err != nil {
		return fmt.Errorf("fencing: fenced update of %q: %w", key, err)
	}
	if n > 0 {
		return nil
	}
	h, err := g.Highest(ctx, db, key)
	if err != nil {
		return err
	}
	if _, ok := p.admits(h); ok {
		return nil // MySQL counts a row left unchanged as unaffected
	}
	return &StalePairError{Key: key, Pair: p, Highest: h}
}

// Highest reads key's stored sides; a missing row gives ErrNoRow.
func (g SQLPairGuard) Highest(ctx context.Context, db SQLDB, key string) (Pair, error) {
	var f, t int64
	ph := SQLGuard{Placeholders: g.Placeholders}.ph(1)
	q := fmt.Sprintf("SELECT %s, %s FROM %s WHERE %s = %s", g.FromColumn, g.ToColumn, g.Table, g.KeyColumn, ph)
	switch found, err := db.QueryRow(ctx, q, []any{key}, &f, &t); {
	case err != nil:
		return Pair{}, fmt.Errorf("fencing: reading the fences of %q: %w", key, err)
	case !found:
		return Pair{}, fmt.Errorf("%w: %q", ErrNoRow, key)
	}
	return Pair{From: uint64(f), To: uint64(t)}, nil
}
