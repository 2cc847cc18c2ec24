package testbed

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// pgbouncerPort is the container port PgBouncer listens on.
const pgbouncerPort = "6432/tcp"

// PgBouncerNode is a PgBouncer in front of a PostgresNode, on a private
// Docker network. Its links (Addr, Link, URL) reach PgBouncer; faults on
// the Node hit PgBouncer, not the server behind it.
type PgBouncerNode struct {
	*Node
	// PoolMode is "session", "transaction" or "statement".
	PoolMode string
}

// URL returns a postgres:// URL reaching PgBouncer through the client link
// named client, as the superuser, without TLS, in the simple query
// protocol: PgBouncer 1.18 cannot carry prepared statements across server
// connections in transaction pooling.
func (b *PgBouncerNode) URL(client string) string {
	return postgresURL(b.Link(client).Addr()) + "&default_query_exec_mode=simple_protocol"
}

// pgbouncerConfig is PgBouncer's configuration: every database is
// forwarded to host "postgres"; clients are trusted if listed in the
// user file.
func pgbouncerConfig(poolMode string) string {
	return strings.Join([]string{
		"[databases]",
		"* = host=postgres port=5432 client_encoding=UTF8",
		"[pgbouncer]",
		"listen_addr = 0.0.0.0",
		"listen_port = 6432",
		"unix_socket_dir =",
		"auth_type = trust",
		"auth_file = /etc/pgbouncer/distlock-users.txt",
		"pool_mode = " + poolMode,
		"max_client_conn = 1000",
		"default_pool_size = 20",
		"ignore_startup_parameters = extra_float_digits",
		"admin_users = " + PostgresUser,
		"",
	}, "\n")
}

// probePgBouncer is the readiness check: SELECT 1 through PgBouncer, which
// also needs the server behind it.
func probePgBouncer(ctx context.Context, addr string) error {
	c, err := pgx.Connect(ctx, postgresURL(addr)+"&connect_timeout=1&default_query_exec_mode=simple_protocol")
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	var one int
	return c.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// StartPostgresBehindPgBouncer starts a Postgres server ("postgres-0",
// reachable on a private network as "postgres") and a PgBouncer
// ("pgbouncer-0", image Images.PgBouncer) in front of it with the given
// pool mode ("session", "transaction" or "statement"). Clients may use
// either node's links. Call RequireDocker first. The containers and the
// network are removed when the test ends.
func StartPostgresBehindPgBouncer(t testing.TB, opts PostgresOptions, poolMode string) (*PostgresNode, *PgBouncerNode) {
	t.Helper()
	switch poolMode {
	case "session", "transaction", "statement":
	default:
		t.Fatalf("testbed: PgBouncer pool mode %q: want session, transaction or statement", poolMode)
	}
	pgImage := Images.Postgres.Resolve(t)
	bImage := Images.PgBouncer.Resolve(t)
	nw := newNetwork(t)
	ps := postgresSpec("postgres-0", pgImage, opts)
	ps.network, ps.aliases = nw, []string{"postgres"}
	bs := nodeSpec{
		name:  "pgbouncer-0",
		image: bImage,
		port:  pgbouncerPort,
		cmd:   []string{"pgbouncer", "/etc/pgbouncer/distlock.ini"},
		files: []fileSpec{
			{path: "/etc/pgbouncer/distlock.ini", content: pgbouncerConfig(poolMode), mode: 0o644},
			{path: "/etc/pgbouncer/distlock-users.txt", content: fmt.Sprintf("%q \"\"\n", PostgresUser), mode: 0o644},
		},
		network: nw,
		aliases: []string{"pgbouncer"},
		probe:   probePgBouncer,
	}
	nodes := startNodes(t, []nodeSpec{ps, bs})
	return &PostgresNode{Node: nodes[0]}, &PgBouncerNode{Node: nodes[1], PoolMode: poolMode}
}
