package fencing_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/fencing"
	"github.com/distlock/distlock/pgadvisory"
	"github.com/distlock/distlock/testbed"
)

// openPostgres starts a Postgres and returns a connection to it as a
// fencing.SQLDB, or skips under -short or without Docker.
func openPostgres(t *testing.T) fencing.SQLDB {
	t.Helper()
	testbed.RequireDocker(t)
	node := testbed.StartPostgres(t, testbed.PostgresOptions{})
	cfg, err := pgx.ParseConfig(node.URL("guard"))
	if err != nil {
		t.Fatal(err)
	}
	// One connection per writer: the concurrent test shares nothing.
	return &perCall{cfg: cfg, t: t}
}

// perCall runs each statement on a new connection, so concurrent writers
// really race on the server.
type perCall struct {
	cfg *pgx.ConnConfig
	t   *testing.T
}

func (p *perCall) with(ctx context.Context, f func(fencing.SQLDB) error) error {
	c, err := pgx.ConnectConfig(ctx, p.cfg)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	return f(pgadvisory.FencingDB(c))
}

func (p *perCall) Exec(ctx context.Context, q string, args ...any) (n int64, err error) {
	err = p.with(ctx, func(db fencing.SQLDB) error { n, err = db.Exec(ctx, q, args...); return err })
	return n, err
}

func (p *perCall) QueryRow(ctx context.Context, q string, args []any, dest ...any) (found bool, err error) {
	err = p.with(ctx, func(db fencing.SQLDB) error { found, err = db.QueryRow(ctx, q, args, dest...); return err })
	return found, err
}

// TestSQLGuard checks on Postgres that Write inserts a row and then accepts
// only equal or higher fences, that Update is refused for a lower fence,
// that a refusal reports the stored fence, and that a missing row gives
// ErrNoRow to Update and Read.
func TestSQLGuard(t *testing.T) {
	db := openPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g := fencing.SQLGuard{Table: "accounts", KeyColumn: "id", FenceColumn: "fence", ValueColumn: "balance"}
	if _, err := db.Exec(ctx, g.CreateTableSQL("bigint")); err != nil {
		t.Fatal(err)
	}

	// Write inserts, then accepts equal or higher fences only.
	if err := g.Write(ctx, db, "acct-1", 5, 100); err != nil {
		t.Fatalf("first write: %v", err)
	}
	err := g.Write(ctx, db, "acct-1", 3, 999) // a stale holder
	var stale *fencing.StaleFenceError
	if !errors.As(err, &stale) || stale.Highest != 5 || stale.Fence != 3 || stale.Key != "acct-1" {
		t.Fatalf("stale write: %v", err)
	}
	if !errors.Is(err, fencing.ErrStaleFence) {
		t.Fatalf("%v does not match ErrStaleFence", err)
	}
	if err := g.Write(ctx, db, "acct-1", 5, 110); err != nil {
		t.Fatalf("the same holder writing again: %v", err)
	}
	var v int64
	f, err := g.Read(ctx, db, "acct-1", &v)
	if err != nil || v != 110 || f != 5 {
		t.Fatalf("read %d fence %d: %v (the stale write leaked?)", v, f, err)
	}

	// Update: a read-modify-write in one statement.
	if err := g.Update(ctx, db, "acct-1", 7, "balance = balance + $1", 5); err != nil {
		t.Fatalf("update: %v", err)
	}
	err = g.Update(ctx, db, "acct-1", 6, "balance = balance + $1", 1000)
	if !errors.As(err, &stale) || stale.Highest != 7 {
		t.Fatalf("stale update: %v", err)
	}
	if f, err := g.Read(ctx, db, "acct-1", &v); err != nil || v != 115 || f != 7 {
		t.Fatalf("after updates: %d fence %d: %v", v, f, err)
	}
	if err := g.Update(ctx, db, "nobody", 9, "balance = $1", 1); !errors.Is(err, fencing.ErrNoRow) {
		t.Fatalf("update of a missing row: %v", err)
	}
	if _, err := g.Read(ctx, db, "nobody", &v); !errors.Is(err, fencing.ErrNoRow) {
		t.Fatalf("read of a missing row: %v", err)
	}
}

// TestSQLGuardConcurrent checks that when writers with different fences
// race on one row, the row ends with the highest fence's value whatever
// the order.
func TestSQLGuardConcurrent(t *testing.T) {
	db := openPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g := fencing.SQLGuard{Table: "reg", KeyColumn: "k", FenceColumn: "fence", ValueColumn: "v"}
	if _, err := db.Exec(ctx, g.CreateTableSQL("bigint")); err != nil {
		t.Fatal(err)
	}
	const n = 20
	errs := make(chan error, n)
	for i := 1; i <= n; i++ {
		go func(fence uint64) { errs <- g.Write(ctx, db, "k", fence, int64(fence)*10) }(uint64(i))
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil && !errors.Is(err, fencing.ErrStaleFence) {
			t.Fatal(err)
		}
	}
	var v int64
	if f, err := g.Read(ctx, db, "k", &v); err != nil || f != n || v != n*10 {
		t.Fatalf("row holds %d with fence %d (%v), want the highest writer's", v, f, err)
	}
}
