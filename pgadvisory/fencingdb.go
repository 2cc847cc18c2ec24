package pgadvisory

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/distlock/distlock/fencing"
)

// Querier is the part of *pgx.Conn, pgx.Tx and *pgxpool.Pool that
// FencingDB and LockTx use.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// FencingDB adapts a pgx connection, transaction or pool to fencing.SQLDB,
// for a fencing.SQLGuard on a Postgres table:
//
//	g := fencing.SQLGuard{Table: "jobs", KeyColumn: "id", FenceColumn: "fence", ValueColumn: "state"}
//	err := g.Write(ctx, pgadvisory.FencingDB(conn), "job-7", lease.Fence(), "done")
//
// Exec reports the rows affected; QueryRow reports false, and no error,
// when no row matches (pgx.ErrNoRows). Other errors are q's, unchanged.
func FencingDB(q Querier) fencing.SQLDB { return fencingDB{q} }

// GuardDB is FencingDB.
//
// Deprecated: use FencingDB. GuardDB remains while callers outside this
// package move to FencingDB.
func GuardDB(q Querier) fencing.SQLDB { return FencingDB(q) }

// fencingDB is the fencing.SQLDB of FencingDB.
type fencingDB struct{ q Querier }

// Exec runs sql and reports the rows it affected.
func (f fencingDB) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := f.q.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

// QueryRow scans the first row of sql into dest; false without error if
// there is none.
func (f fencingDB) QueryRow(ctx context.Context, sql string, args []any, dest ...any) (bool, error) {
	err := f.q.QueryRow(ctx, sql, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}
