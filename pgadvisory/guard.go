package pgadvisory

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/distlock/distlock/fencing"
)

// Querier is the part of *pgx.Conn, pgx.Tx and *pgxpool.Pool that GuardDB
// and LockTx use.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// GuardDB adapts a pgx connection, transaction or pool to fencing.SQLDB,
// for a fencing.SQLGuard on a Postgres table:
//
//	g := fencing.SQLGuard{Table: "jobs", KeyColumn: "id", FenceColumn: "fence", ValueColumn: "state"}
//	err := g.Write(ctx, pgadvisory.GuardDB(conn), "job-7", lease.Fence(), "done")
func GuardDB(q Querier) fencing.SQLDB { return guardDB{q} }

type guardDB struct{ q Querier }

func (g guardDB) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := g.q.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

func (g guardDB) QueryRow(ctx context.Context, sql string, args []any, dest ...any) (bool, error) {
	err := g.q.QueryRow(ctx, sql, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}
