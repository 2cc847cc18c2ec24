package bench

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/pgadvisory"
	"github.com/distlock/distlock/testbed"
)

// pgServer is one Postgres in a container, reached at its bridge address.
type pgServer struct {
	node *testbed.PostgresNode
	url  string
}

// startPG starts one Postgres for b (skipped under -short or without
// Docker). Like startRedis, benchmarks connect to the container's bridge
// address, bypassing the testbed's proxy and Docker's userland proxy.
func startPG(b *testing.B) *pgServer {
	b.Helper()
	testbed.RequireDocker(b)
	node := testbed.StartPostgres(b, testbed.PostgresOptions{})
	addr := node.HostAddr()
	out, err := exec.Command("docker", "inspect", "-f",
		"{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", node.ContainerID()).Output()
	if ip := strings.Fields(string(out)); err == nil && len(ip) > 0 {
		addr = net.JoinHostPort(ip[0], "5432")
	} else {
		b.Logf("no bridge address (%v): using the published port", err)
	}
	s := &pgServer{node: node, url: "postgres://" + testbed.PostgresUser + "@" + addr + "/" + testbed.PostgresDB + "?sslmode=disable"}
	// The fence sequence our Lockers create on first use, created up front
	// so that the raw+nextval controls can run before any of ours.
	if _, err := s.rawConn(b).Exec(context.Background(), "CREATE SEQUENCE IF NOT EXISTS distlock_fence AS bigint"); err != nil {
		b.Fatal(err)
	}
	return s
}

// rawConn is a plain pgx connection (extended protocol, cached
// statements: pgx's default), closed when b ends.
func (s *pgServer) rawConn(b *testing.B) *pgx.Conn {
	b.Helper()
	c, err := pgx.Connect(context.Background(), s.url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// locker is one of our Lockers, closed when b ends.
func (s *pgServer) locker(b *testing.B, opts *pgadvisory.Options) *pgadvisory.Locker {
	b.Helper()
	cfg, err := pgx.ParseConfig(s.url)
	if err != nil {
		b.Fatal(err)
	}
	l, err := pgadvisory.New(cfg, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return l
}

// sessions counts the server's client sessions with application_name.
func (s *pgServer) sessions(b *testing.B, app string) int {
	b.Helper()
	n, err := s.node.QueryInt(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app)
	if err != nil {
		b.Fatal(err)
	}
	return int(n)
}

// pgRawContender holds one connection of its own and blocks in
// pg_advisory_lock, as a pgx user would.
// With fence, the lock statement also draws a durable fence from our
// sequence, as ours does: what the fence alone costs.
type pgRawContender struct {
	c     *pgx.Conn
	fence bool
}

func (r pgRawContender) acquire(ctx context.Context, key string) (func(context.Context) error, error) {
	id := pgadvisory.KeyID(pgadvisory.DefaultNamespace, key)
	q := "SELECT pg_advisory_lock($1)"
	if r.fence {
		q = "SELECT nextval('distlock_fence') FROM pg_advisory_lock($1)"
	}
	if _, err := r.c.Exec(ctx, q, id); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		_, err := r.c.Exec(ctx, "SELECT pg_advisory_unlock($1)", id)
		return err
	}, nil
}

// pgOursContender is our Acquire and Release.
type pgOursContender struct{ l *pgadvisory.Locker }

func (o pgOursContender) acquire(ctx context.Context, key string) (func(context.Context) error, error) {
	ls, err := o.l.Acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	return ls.Release, nil
}
