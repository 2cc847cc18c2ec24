package testbed

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// postgresPort is the container port every Postgres server listens on.
const postgresPort = "5432/tcp"

// postgresDataDir is PGDATA in the image (scripts/images.sh); it is a
// volume (see dataVolumes).
const postgresDataDir = "/var/lib/postgresql/data"

// PostgresUser is the superuser of the test clusters (trust
// authentication: no password), and PostgresDB its database.
const (
	PostgresUser = "postgres"
	PostgresDB   = "postgres"
)

// PostgresOptions configures a Postgres server. Every server runs
// "postgres -c listen_addresses=* -c max_connections=300" with a
// pg_hba.conf that trusts every client, then Args
// (more "-c name=value" pairs). The data directory lives in the
// container, so it survives Kill and Start (crash recovery runs), as a
// real server's disk does.
type PostgresOptions struct {
	// Args are extra postgres arguments, appended last.
	Args []string
	// TLS turns ssl on (see PostgresTLS); nil: no TLS.
	TLS *PostgresTLS
	// Users are password users created once the server runs (see
	// PostgresPasswordUser).
	Users []PostgresPasswordUser
}

// PostgresNode is one Postgres server in a container. The embedded Node
// gives its client links (Addr, Link) and faults (Kill, Stop, Start,
// Restart, Pause, Unpause).
type PostgresNode struct {
	*Node
}

// URL returns a postgres:// URL (the pgx DSN) reaching the server through
// the client link named client, as the superuser, without TLS.
func (p *PostgresNode) URL(client string) string {
	return postgresURL(p.Link(client).Addr())
}

func postgresURL(addr string) string {
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", PostgresUser, addr, PostgresDB)
}

// Admin connects straight to the server's published port as the
// superuser, bypassing the links and their faults. While the node is down
// it fails with ErrNodeDown. The caller closes the connection.
func (p *PostgresNode) Admin(ctx context.Context) (*pgx.Conn, error) {
	addr := p.HostAddr()
	if addr == "" {
		return nil, fmt.Errorf("%w: %s", ErrNodeDown, p.name)
	}
	c, err := pgx.Connect(ctx, postgresURL(addr))
	if err != nil {
		return nil, fmt.Errorf("testbed: %s: admin connection: %w", p.name, err)
	}
	return c, nil
}

// Exec runs one statement on a new admin connection (see Admin).
func (p *PostgresNode) Exec(ctx context.Context, sql string, args ...any) error {
	c, err := p.Admin(ctx)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	if _, err := c.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("testbed: %s: %s: %w", p.name, sql, err)
	}
	return nil
}

// QueryInt runs a query returning one integer on a new admin connection.
func (p *PostgresNode) QueryInt(ctx context.Context, sql string, args ...any) (int64, error) {
	c, err := p.Admin(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	var n int64
	if err := c.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("testbed: %s: %s: %w", p.name, sql, err)
	}
	return n, nil
}

// probePostgres is the readiness check: a connection that answers
// SELECT 1 (not while the server is starting up or recovering).
func probePostgres(ctx context.Context, addr string) error {
	c, err := pgx.Connect(ctx, postgresURL(addr)+"&connect_timeout=1")
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	var one int
	return c.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// postgresHBA is the server's client authentication file: everyone is
// trusted (initdb's own file trusts only local connections).
const postgresHBA = "/etc/distlock-pg_hba.conf"

// postgresSpec is the container spec of one Postgres node.
func postgresSpec(name, image string, opts PostgresOptions) nodeSpec {
	cmd := append([]string{"postgres", "-c", "listen_addresses=*", "-c", "max_connections=300", "-c", "hba_file=" + postgresHBA}, opts.Args...)
	return nodeSpec{
		name:  name,
		image: image,
		port:  postgresPort,
		cmd:   cmd,
		env:   map[string]string{"POSTGRES_USER": PostgresUser, "POSTGRES_HOST_AUTH_METHOD": "trust"},
		files: []fileSpec{{
			path:    postgresHBA,
			content: "local all all trust\n" + opts.hbaLines() + "host all all all trust\n",
			mode:    0o644,
		}},
		data:  []string{postgresDataDir},
		probe: probePostgres,
	}
}

// StartPostgres starts one Postgres server named "postgres-0" (image
// Images.Postgres). Call RequireDocker first. The container is removed
// when the test ends.
func StartPostgres(t testing.TB, opts PostgresOptions) *PostgresNode {
	t.Helper()
	image := Images.Postgres.Resolve(t)
	nodes := startNodes(t, []nodeSpec{opts.withTLS(t, postgresSpec("postgres-0", image, opts))})
	p := &PostgresNode{Node: nodes[0]}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	p.createUsers(ctx, t, opts.Users)
	return p
}
