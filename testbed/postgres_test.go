package testbed

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPostgres: a server through a link, its data surviving Kill and
// Start, the link's address stable across the restart.
func TestPostgres(t *testing.T) {
	RequireDocker(t)
	pg := StartPostgres(t, PostgresOptions{Args: []string{"-c", "max_locks_per_transaction=32"}})
	requireMount(t, pg.Node, postgresDataDir, mountVolume)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, pg.URL("a"))
	if err != nil {
		t.Fatal(err)
	}
	var setting string
	if err := c.QueryRow(ctx, "SHOW max_locks_per_transaction").Scan(&setting); err != nil || setting != "32" {
		t.Fatalf("Args not applied: %q %v", setting, err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE t (v int); INSERT INTO t VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	_ = c.Close(ctx)
	addr := pg.Link("a").Addr()
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if pg.Link("a").Addr() != addr {
		t.Fatal("link address changed across the restart")
	}
	n, err := pg.QueryInt(ctx, "SELECT v FROM t")
	if err != nil || n != 7 {
		t.Fatalf("data after Kill and Start: %d %v", n, err)
	}
	c, err = pgx.Connect(ctx, pg.URL("a"))
	if err != nil {
		t.Fatalf("through the link after the restart: %v", err)
	}
	_ = c.Close(ctx)
	if err := pg.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Admin(ctx); err == nil {
		t.Fatal("Admin reached a killed node")
	}
}

// TestPgBouncer: in transaction pooling the client's BackendKeyData pid is
// PgBouncer's own, not the server backend's (what pooler detection
// relies on), and statements reach the server.
func TestPgBouncer(t *testing.T) {
	RequireDocker(t)
	pg, bouncer := StartPostgresBehindPgBouncer(t, PostgresOptions{}, "transaction")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, bouncer.URL("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var pid int64
	if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if uint32(pid) == c.PgConn().PID() {
		t.Fatalf("PgBouncer passed the server's pid %d through", pid)
	}
	n, err := pg.QueryInt(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid)
	if err != nil || n != 1 {
		t.Fatalf("the backend behind PgBouncer is not on the server: %d %v", n, err)
	}
}
