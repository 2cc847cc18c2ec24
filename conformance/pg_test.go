package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/conformance"
	"github.com/distlock/distlock/fencing"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/pgadvisory"
	"github.com/distlock/distlock/testbed"
)

// TestPostgres runs the suite on Postgres advisory locks ("PG").
func TestPostgres(t *testing.T) {
	testbed.RequireDocker(t)
	conformance.Run(t, pgHarness(t))
}

// pgHarness starts one Postgres server, each client connected over its
// own packet link, and a PgBouncer in transaction pooling mode in front of
// it for S28.
func pgHarness(t *testing.T) conformance.Harness {
	pg, bouncer := testbed.StartPostgresBehindPgBouncer(t, testbed.PostgresOptions{}, "transaction")
	links := newLinkSet(t, pg.Node)
	url := func(client string) string {
		return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable&connect_timeout=2", testbed.PostgresUser, links.addrs(client)[0], testbed.PostgresDB)
	}
	guard := fencing.SQLGuard{Table: "conformance_guarded", KeyColumn: "k", FenceColumn: "fence", ValueColumn: "v"}
	if err := pg.Exec(context.Background(), guard.CreateTableSQL("text")); err != nil {
		t.Fatal(err)
	}
	admin := pgAdmin{pg: pg, guard: guard}
	return conformance.Harness{
		Name: "PG",
		Spec: "PG",
		TTL:  time.Second,
		NewLocker: func(ctx context.Context, client string) (distlock.Locker, error) {
			return distlock.Open(ctx, url(client))
		},
		URL:          url,
		Servers:      []conformance.Server{pg},
		Majority:     []int{0},
		Links:        func(client string) conformance.Link { return links.links(client) },
		Revoke:       admin.revoke,
		Commands:     admin.commands,
		GuardedWrite: admin.guardedWrite,
		GuardedRead:  admin.guardedRead,
		// S28: session mode (the default) through PgBouncer.
		PoolerURL: func(client string) string { return bouncer.URL(client) + "&connect_timeout=2" },
		UnpinnedLocker: func(ctx context.Context, client string) (distlock.Locker, error) {
			return newUnpinned(ctx, url(client))
		},
	}
}

// pgAdmin is the operator's access to the PG harness's server.
type pgAdmin struct {
	pg    *testbed.PostgresNode
	guard fencing.SQLGuard // S32's fenced table
}

// do runs f on a new direct connection (the server may have been
// restarted since the last call).
func (a pgAdmin) do(ctx context.Context, f func(*pgx.Conn) error) error {
	c, err := a.pg.Admin(ctx)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	return f(c)
}

// revoke ends the session holding key, as an operator would
// (pg_terminate_backend).
func (a pgAdmin) revoke(ctx context.Context, key string) error {
	return a.do(ctx, func(c *pgx.Conn) error {
		var n int
		q := "SELECT count(pg_terminate_backend(pid)) FROM (" + pgadvisory.LocksSQL + ") l WHERE granted"
		if err := c.QueryRow(ctx, q, pgadvisory.KeyID(pgadvisory.DefaultNamespace, key)).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("no session holds %q", key)
		}
		return nil
	})
}

// commands counts the transactions committed or rolled back: each lock,
// unlock or heartbeat statement is one (the server's statistics lag by up
// to a second).
func (a pgAdmin) commands(ctx context.Context) (int64, error) {
	var n int64
	err := a.do(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()").Scan(&n)
	})
	return n, err
}

// guardedWrite is S32's guarded write: a fenced SQL write
// (fencing.SQLGuard) on a table of the same server.
func (a pgAdmin) guardedWrite(ctx context.Context, ls distlock.Lease, value string) error {
	return a.do(ctx, func(c *pgx.Conn) error {
		return a.guard.Write(ctx, pgadvisory.FencingDB(c), ls.Key(), ls.Fence(), value)
	})
}

// guardedRead returns the value last written for key ("" if none).
func (a pgAdmin) guardedRead(ctx context.Context, key string) (string, error) {
	var v string
	err := a.do(ctx, func(c *pgx.Conn) error {
		_, err := a.guard.Read(ctx, pgadvisory.FencingDB(c), key, &v)
		if errors.Is(err, fencing.ErrNoRow) {
			return nil
		}
		return err
	})
	return v, err
}

// unpinned is the mistake S29 demonstrates: advisory locks taken and
// released on whatever connection of a small pool comes next, as with
// db.Exec("SELECT pg_advisory_lock($1)") on a database/sql or pgxpool
// pool. It is deliberately wrong; never copy it.
type unpinned struct {
	mu    sync.Mutex
	conns []*pgx.Conn
	next  int
	fence atomic.Uint64
}

func newUnpinned(ctx context.Context, url string) (*unpinned, error) {
	u := &unpinned{}
	for i := 0; i < 2; i++ {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			_ = u.Close()
			return nil, err
		}
		u.conns = append(u.conns, c)
	}
	return u, nil
}

// exec runs one statement on the next pooled connection, round robin.
func (u *unpinned) exec(ctx context.Context, sql string, id int64) (bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	c := u.conns[u.next%len(u.conns)]
	u.next++
	var ok bool
	err := c.QueryRow(ctx, sql, id).Scan(&ok)
	return ok, err
}

func (u *unpinned) Acquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	for {
		ls, err := u.TryAcquire(ctx, key, opts...)
		if !errors.Is(err, distlock.ErrNotAcquired) || ctx.Err() != nil {
			return ls, err
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(distlock.ErrNotAcquired, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (u *unpinned) TryAcquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	o, err := distlock.DefaultOptions().ResolveFor(key, opts...)
	if err != nil {
		return nil, err
	}
	id := pgadvisory.KeyID(pgadvisory.DefaultNamespace, key)
	start := time.Now()
	ok, err := u.exec(ctx, "SELECT pg_try_advisory_lock($1)", id)
	if err != nil {
		return nil, errors.Join(distlock.ErrUnavailable, err)
	}
	if !ok {
		return nil, distlock.ErrNotAcquired
	}
	return lease.Grant(ctx, lease.Config{
		Key: key, Token: lease.NewToken(), Fence: u.fence.Add(1), Start: start,
		ValidUntil: start.Add(o.TTL), Options: o,
		Driver: unpinnedDriver{u: u, id: id},
	})
}

func (u *unpinned) Guarantees() distlock.Guarantees {
	return distlock.Guarantees{Backend: "postgres-unpinned", CrossProcess: true}
}

func (u *unpinned) Close() error {
	for _, c := range u.conns {
		_ = c.Close(context.Background())
	}
	return nil
}

type unpinnedDriver struct {
	u  *unpinned
	id int64
}

func (d unpinnedDriver) Extend(_ context.Context, ttl time.Duration) (time.Time, error) {
	return time.Now().Add(ttl), nil
}

func (d unpinnedDriver) Release(ctx context.Context) error {
	ok, err := d.u.exec(ctx, "SELECT pg_advisory_unlock($1)", d.id)
	if err == nil && !ok {
		return fmt.Errorf("%w: unlock ran on a connection that did not hold the lock", distlock.ErrLeaseLost)
	}
	return err
}
