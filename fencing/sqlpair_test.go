package fencing_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock/fencing"
)

// TestSQLPairGuard: on Postgres, a table switched from single fences to
// pairs (the old fence column becomes the old side) admits exactly what
// PairGuard admits, step by step, and keeps the value of admitted writes
// only.
func TestSQLPairGuard(t *testing.T) {
	db := openPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	single := fencing.SQLGuard{Table: "orders", KeyColumn: "id", FenceColumn: "fence", ValueColumn: "n"}
	if _, err := db.Exec(ctx, single.CreateTableSQL("bigint")); err != nil {
		t.Fatal(err)
	}
	if err := single.Write(ctx, db, "o-1", 5, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, "ALTER TABLE orders ADD COLUMN fence_to bigint NOT NULL DEFAULT 0"); err != nil {
		t.Fatal(err)
	}
	g := fencing.SQLPairGuard{Table: "orders", KeyColumn: "id", FromColumn: "fence", ToColumn: "fence_to"}
	var mem fencing.PairGuard
	mem.Seed("o-1", 5)
	var applied int64
	for i, p := range []fencing.Pair{
		{From: 4}, {From: 5}, {From: 6, To: 100}, {From: 5, To: 200}, {To: 99},
		{To: 101}, {From: 7, To: 100}, {From: 7}, {}, {To: 101},
	} {
		want := mem.Admit("o-1", p)
		got := g.Update(ctx, db, "o-1", p, "n = n + $1", 1)
		if (got == nil) != (want == nil) {
			t.Fatalf("step %d: %v: SQL says %v, PairGuard says %v", i, p, got, want)
		}
		var se *fencing.StalePairError
		if got != nil && (!errors.Is(got, fencing.ErrStaleFence) || !errors.As(got, &se)) {
			t.Fatalf("step %d: refusal %v is not a StalePairError", i, got)
		}
		if got == nil {
			applied++
		}
	}
	h, err := g.Highest(ctx, db, "o-1")
	if err != nil || h != mem.Highest("o-1") {
		t.Fatalf("stored sides %v (%v), PairGuard's %v", h, err, mem.Highest("o-1"))
	}
	var n int64
	if _, err := single.Read(ctx, db, "o-1", &n); err != nil || n != applied {
		t.Fatalf("the row counts %d writes, %d were admitted (%v)", n, applied, err)
	}
	if err := g.Update(ctx, db, "nobody", fencing.Pair{To: 1}, "n = $1", 1); !errors.Is(err, fencing.ErrNoRow) {
		t.Fatalf("missing row: %v", err)
	}
}
