package fencing_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/distlock/distlock/fencing"
)

// A register keeps the write of the newest holder and refuses a paused
// former holder's.
func ExampleRegister() {
	var balance fencing.Register[int]
	_ = balance.Write(7, 100)   // holder with fence 7
	err := balance.Write(6, 50) // a paused former holder wakes up
	fmt.Println(err)
	v, fence := balance.Read()
	fmt.Println(v, fence)
	// Output:
	// fencing: stale fence 6, highest accepted 7
	// 100 7
}

// Update is a read-modify-write that a stale holder cannot complete.
func ExampleRegister_Update() {
	var counter fencing.Register[int]
	add := func(v int) int { return v + 1 }
	fmt.Println(counter.Update(3, add), counter.Update(3, add)) // one holder, twice
	fmt.Println(errors.Is(counter.Update(2, add), fencing.ErrStaleFence))
	v, _ := counter.Read()
	fmt.Println(v)
	// Output:
	// <nil> <nil>
	// true
	// 2
}

// A Guard keeps one highest fence per key: fences of different keys do
// not interfere.
func ExampleGuard() {
	var g fencing.Guard
	fmt.Println(g.Admit("orders/1", 10))
	fmt.Println(g.Admit("orders/2", 4)) // another key: its own fences
	fmt.Println(errors.Is(g.Admit("orders/1", 9), fencing.ErrStaleFence))
	fmt.Println(g.Highest("orders/1"), g.Highest("orders/2"), g.Highest("none"))
	// Output:
	// <nil>
	// <nil>
	// true
	// 10 4 0
}

// A refused write's error says which fence was refused and which is the
// highest accepted.
func ExampleStaleFenceError() {
	var g fencing.Guard
	_ = g.Admit("k", 8)
	var stale *fencing.StaleFenceError
	if errors.As(g.Admit("k", 5), &stale) {
		fmt.Println(stale.Key, stale.Fence, stale.Highest)
	}
	// Output: k 5 8
}

// The statement creating a table a SQLGuard can Write and Read.
func ExampleSQLGuard_CreateTableSQL() {
	g := fencing.SQLGuard{Table: "accounts", KeyColumn: "id", FenceColumn: "fence", ValueColumn: "balance"}
	fmt.Println(g.CreateTableSQL("bigint"))
	// Output: CREATE TABLE IF NOT EXISTS accounts (id text PRIMARY KEY, fence bigint NOT NULL DEFAULT 0, balance bigint)
}

// A fenced write to a SQL table. This example needs a database server
// (Postgres or SQLite, whose ON CONFLICT it uses) and a database/sql
// driver, so it is compiled but not run.
func ExampleSQLGuard_Write() {
	ctx := context.Background()
	db, err := sql.Open("pgx", "postgres://app@db.example/app") // import _ "github.com/jackc/pgx/v5/stdlib"
	if err != nil {
		panic(err)
	}
	defer db.Close()
	g := fencing.SQLGuard{Table: "accounts", KeyColumn: "id", FenceColumn: "fence", ValueColumn: "balance"}
	if _, err := db.ExecContext(ctx, g.CreateTableSQL("bigint")); err != nil {
		panic(err)
	}
	var fence uint64 = 42 // lease.Fence() of the caller's lease
	err = g.Write(ctx, fencing.DatabaseSQL(db), "alice", fence, 100)
	if errors.Is(err, fencing.ErrStaleFence) {
		fmt.Println("a newer holder has written; stop acting as the owner")
	}
}

// During a migration between lock backends, a resource admits writes by
// fence pair: each side a write carries must be at least that side's
// highest.
func ExamplePairGuard() {
	var g fencing.PairGuard
	g.Seed("invoice-42", 7)                                          // the highest single fence accepted before the switch
	fmt.Println(g.Admit("invoice-42", fencing.Pair{From: 8, To: 3})) // phase both
	fmt.Println(g.Admit("invoice-42", fencing.Pair{To: 4}))          // phase to
	fmt.Println(g.Admit("invoice-42", fencing.Pair{To: 2}))          // an earlier holder, late
	// Output:
	// <nil>
	// <nil>
	// fencing: stale fence pair to=2 for "invoice-42", highest accepted from=8,to=4
}
