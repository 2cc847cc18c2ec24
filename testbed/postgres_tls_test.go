package testbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPostgresTLS starts a server with ssl on and a password user allowed
// over TLS only: the user connects with sslmode=verify-full trusting the
// test's CA (over TLS, as pg_stat_ssl shows), not with a wrong password,
// not without TLS; the superuser's plaintext admin connection still works.
func TestPostgresTLS(t *testing.T) {
	RequireDocker(t)
	ca := NewCA(t)
	p := StartPostgres(t, PostgresOptions{
		TLS:   &PostgresTLS{CA: ca, Required: true},
		Users: []PostgresPasswordUser{{Name: "locker", Password: "pw'1"}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, []byte(ca.PEM), 0o600); err != nil {
		t.Fatal(err)
	}
	url := func(pw, mode string) string {
		return fmt.Sprintf("postgres://locker:%s@%s/%s?sslmode=%s&sslrootcert=%s&connect_timeout=5", pw, p.Addr(), PostgresDB, mode, caFile)
	}
	c, err := pgx.Connect(ctx, url("pw%271", "verify-full"))
	if err != nil {
		t.Fatalf("verify-full: %v", err)
	}
	var ssl bool
	if err := c.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil || !ssl {
		t.Fatalf("over TLS: %v %v", ssl, err)
	}
	_ = c.Close(ctx)
	if c, err := pgx.Connect(ctx, url("wrong", "verify-full")); err == nil {
		_ = c.Close(ctx)
		t.Fatal("wrong password accepted")
	}
	if c, err := pgx.Connect(ctx, url("pw%271", "disable")); err == nil {
		_ = c.Close(ctx)
		t.Fatal("plaintext connection of a TLS-only user accepted")
	}
	if n, err := p.QueryInt(ctx, "SELECT 1"); err != nil || n != 1 {
		t.Fatalf("admin: %d %v", n, err)
	}
}
