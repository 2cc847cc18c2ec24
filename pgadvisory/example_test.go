package pgadvisory_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/fencing"
	"github.com/distlock/distlock/pgadvisory"
)

// The examples that lock need a Postgres server at the address they name:
// they have no "Output:" line, so "go test" compiles them but does not
// run them. ExampleKeyID and ExampleParseMode need no server and run.

// A Locker over a DSN (New), Acquire and Release. Each lease holds its own
// connection; Acquire waits on the server, which hands the lock over when
// the holder releases it. It needs a server.
func Example() {
	cfg, err := pgx.ParseConfig("postgres://app@localhost:5432/app?sslmode=disable")
	if err != nil {
		log.Fatal(err)
	}
	locker, err := pgadvisory.New(cfg, &pgadvisory.Options{
		Lock: distlock.Options{TTL: 10 * time.Second},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lease, err := locker.Acquire(ctx, "invoice:42", distlock.WithAutoExtend(time.Minute))
	switch {
	case errors.Is(err, distlock.ErrNotAcquired):
		log.Fatal("still held by someone else after 5s: ", err)
	case err != nil:
		log.Fatal(err)
	}
	defer lease.Release(context.Background())

	fmt.Println("writing with fence", lease.Fence())
	select {
	case <-lease.Done(): // lost (session ended, revoked): stop acting as the owner
		log.Print(lease.Err())
	case <-time.After(100 * time.Millisecond): // the work
	}
}

// Opening by URL (distlock.Open): the pgx DSN plus lock parameters.
// TryAcquire returns at once when another instance holds the key. It
// needs a server.
func Example_open() {
	locker, err := distlock.Open(context.Background(),
		"postgres://app@localhost:5432/app?sslmode=disable&ttl=10s&namespace=billing")
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()

	lease, err := locker.TryAcquire(context.Background(), "report:daily")
	if errors.Is(err, distlock.ErrNotAcquired) {
		return // another instance runs it
	} else if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(context.Background())
	fmt.Println(lease.Key(), lease.Fence())
}

// A fenced write to a Postgres table: the row keeps the fence of its last
// writer, and a holder whose lease was lost (paused, cut off) cannot
// overwrite a later holder's row, however late its statement arrives.
// fencing.SQLGuard checks the fence; FencingDB adapts the pgx connection
// it writes through. It needs a server and a table jobs(id text primary
// key, fence bigint, state text).
func Example_fencedWrite() {
	ctx := context.Background()
	conn, locker := connectAndLocker(ctx, "postgres://app@localhost:5432/app?sslmode=disable")
	defer conn.Close(ctx)
	defer locker.Close()

	guard := fencing.SQLGuard{Table: "jobs", KeyColumn: "id", FenceColumn: "fence", ValueColumn: "state"}
	db := pgadvisory.FencingDB(conn)
	lease, err := locker.Acquire(ctx, "job-7")
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(ctx)
	err = guard.Write(ctx, db, "job-7", lease.Fence(), "done")
	if errors.Is(err, fencing.ErrStaleFence) {
		log.Print("a later holder already wrote: ", err)
	}
}

// Transaction-scoped locking inside your own transaction, as through
// PgBouncer in transaction pooling mode: the lock is released when the
// transaction ends. It needs a server (here behind PgBouncer) and a table
// invoices(id int primary key, state text, fence bigint).
func ExampleLocker_LockTx() {
	ctx := context.Background()
	conn, locker := connectAndLocker(ctx, "postgres://app@pgbouncer:6432/app?sslmode=disable&default_query_exec_mode=exec")
	defer conn.Close(ctx)
	defer locker.Close()

	tx, err := conn.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback(ctx)
	fence, err := locker.LockTx(ctx, tx, "invoice:42")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "UPDATE invoices SET state = 'paid', fence = $1 WHERE id = 42", int64(fence)); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil { // releases the lock
		log.Fatal(err)
	}
}

// The advisory lock id of a string key under a namespace, the same in
// every process and build; the server computes it with KeyIDSQL.
func ExampleKeyID() {
	fmt.Println(pgadvisory.KeyID("distlock", "invoice:42"))
	// Output: -5645875003842982162
}

// The lock mode of a URL's mode parameter.
func ExampleParseMode() {
	m, err := pgadvisory.ParseMode("transaction")
	fmt.Println(m, err)
	_, err = pgadvisory.ParseMode("table")
	fmt.Println(errors.Is(err, distlock.ErrInvalidArgument))
	// Output:
	// transaction <nil>
	// true
}

// connectAndLocker opens a connection of the application's own and a
// Locker with the same configuration, for the examples.
func connectAndLocker(ctx context.Context, dsn string) (*pgx.Conn, *pgadvisory.Locker) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		log.Fatal(err)
	}
	locker, err := pgadvisory.New(conn.Config(), nil)
	if err != nil {
		log.Fatal(err)
	}
	return conn, locker
}
