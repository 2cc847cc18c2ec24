package pgadvisory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/pgadvisory"
	"github.com/distlock/distlock/testbed"
)

// TestMain checks that no goroutine of ours (lease monitors, watchdogs)
// outlives the tests. The Docker client's idle HTTP connections are not
// ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// server is one Postgres in a container for a test.
type server struct {
	node *testbed.PostgresNode
}

// startPostgres starts a Postgres for t, or skips t under -short or
// without Docker.
func startPostgres(t *testing.T, args ...string) *server {
	t.Helper()
	testbed.RequireDocker(t)
	return &server{node: testbed.StartPostgres(t, testbed.PostgresOptions{Args: args})}
}

// config parses the URL of link.
func (s *server) config(t testing.TB, link string) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(s.node.URL(link) + "&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// locker returns a Locker connecting through link, closed when the test
// ends.
func (s *server) locker(t testing.TB, link string, opts *pgadvisory.Options) *pgadvisory.Locker {
	t.Helper()
	l, err := pgadvisory.New(s.config(t, link), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// admin is a connection straight to the server, closed when the test
// ends.
func (s *server) admin(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := s.node.Admin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// withAdmin runs f on a fresh connection straight to the server, within
// 5 s, and closes it; an error of f fails t.
func (s *server) withAdmin(t testing.TB, f func(ctx context.Context, c *pgx.Conn) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := s.node.Admin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if err := f(ctx, c); err != nil {
		t.Fatal(err)
	}
}

// holders lists the pids holding (granted) and waiting for lock id.
func (s *server) holders(t testing.TB, id int64) (held, waiting []int32) {
	t.Helper()
	s.withAdmin(t, func(ctx context.Context, c *pgx.Conn) error {
		rows, err := c.Query(ctx, pgadvisory.LocksSQL, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var pid int32
			var granted bool
			if err := rows.Scan(&pid, &granted); err != nil {
				return err
			}
			if granted {
				held = append(held, pid)
			} else {
				waiting = append(waiting, pid)
			}
		}
		return rows.Err()
	})
	return held, waiting
}

// Shared helpers (internal/locktest), under the names the tests use.
var (
	uniqueKey   = locktest.UniqueKey
	eventually  = locktest.Eventually
	mustAcquire = locktest.MustAcquire
	mustRelease = locktest.MustRelease
	wantErr     = locktest.WantErr
)

// packetLocker returns a Locker that connects to the server through the
// packet-level link named client (no proxy in the path: faults on it drop
// packets in the server's network namespace), and the link. The URL has
// no connect_timeout: the Locker's own bounds must hold. The Locker is
// closed, after the link is healed, when the test ends.
func (s *server) packetLocker(t testing.TB, client string, opts *pgadvisory.Options) (*pgadvisory.Locker, *testbed.PacketLink) {
	t.Helper()
	link := s.node.PacketLink(client)
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", testbed.PostgresUser, link.Addr(), testbed.PostgresDB))
	if err != nil {
		t.Fatal(err)
	}
	l, err := pgadvisory.New(cfg, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := link.Heal(ctx); err != nil {
			t.Errorf("heal %s: %v", client, err)
		}
		_ = l.Close()
	})
	return l, link
}

// holderPID is the backend holding key (default namespace).
func (s *server) holderPID(t *testing.T, key string) int32 {
	t.Helper()
	held, _ := s.holders(t, pgadvisory.KeyID(pgadvisory.DefaultNamespace, key))
	if len(held) != 1 {
		t.Fatalf("%q held by %v", key, held)
	}
	return held[0]
}

// queryStart is when backend pid started its last statement.
func queryStart(t *testing.T, s *server, pid int32) time.Time {
	t.Helper()
	var at time.Time
	s.withAdmin(t, func(ctx context.Context, c *pgx.Conn) error {
		return c.QueryRow(ctx, "SELECT query_start FROM pg_stat_activity WHERE pid = $1", pid).Scan(&at)
	})
	return at
}

// mustFault applies a link fault, failing t if it cannot.
func mustFault(t *testing.T, fault func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := fault(ctx); err != nil {
		t.Fatal(err)
	}
}
