package pgadvisory_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/pgadvisory"
)

// TestSchemesRegistered: importing the package registers the postgres and
// postgresql schemes with distlock.Open.
func TestSchemesRegistered(t *testing.T) {
	for _, s := range []string{"postgres", "postgresql"} {
		if !slices.Contains(distlock.Schemes(), s) {
			t.Fatalf("scheme %q not registered: %v", s, distlock.Schemes())
		}
	}
}

// TestOpenRejects: malformed lock parameters and malformed pgx parameters
// make Open fail with ErrInvalidArgument. Open does no I/O: it needs no
// server.
func TestOpenRejects(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{
		"postgres://u@127.0.0.1:1/db?ttl=soon",
		"postgres://u@127.0.0.1:1/db?ttl=-1s",
		"postgres://u@127.0.0.1:1/db?mode=sometimes",
		"postgres://u@127.0.0.1:1/db?max_idle=x",
		"postgres://u@127.0.0.1:1/db?fence_sequence=a.b.c",
		"postgres://u@127.0.0.1:1/db?connect_timeout=banana", // pgx's, malformed
		"postgres://u@127.0.0.1:1/db?sslmode=bogus",
		"postgres://u@127.0.0.1:1/db?ttl=5s&namespace=%zz", // a query that does not parse
	} {
		l, err := distlock.Open(ctx, u)
		if !errors.Is(err, distlock.ErrInvalidArgument) {
			if l != nil {
				_ = l.Close()
			}
			t.Fatalf("Open(%q): %v, want ErrInvalidArgument", u, err)
		}
	}
}

// TestOpen: a URL of either scheme opens a *Locker with its lock
// parameters applied: the TTL sets the validity, namespace the lock ids,
// and fence_sequence names the sequence created.
func TestOpen(t *testing.T) {
	s := startPostgres(t)
	ctx := context.Background()
	for _, scheme := range []string{"postgres", "postgresql"} {
		u := scheme + s.node.URL("a")[len("postgres"):] + "&ttl=5s&retry_min=1ms&retry_max=2ms&namespace=app&fence_sequence=public.app_fence&max_idle=2&conn_check_interval=500ms&connect_timeout=2"
		l, err := distlock.Open(ctx, u)
		if err != nil {
			t.Fatalf("Open(%s): %v", u, err)
		}
		pl, ok := l.(*pgadvisory.Locker)
		if !ok {
			t.Fatalf("Open returned %T", l)
		}
		key := uniqueKey(t)
		ls := mustAcquire(t, l, key)
		if left := time.Until(ls.ValidUntil()); left > 5*time.Second || left < 4*time.Second {
			t.Fatalf("validity %v with ttl=5s", left)
		}
		if held, _ := s.holders(t, pgadvisory.KeyID("app", key)); len(held) != 1 || pl.KeyID(key) != pgadvisory.KeyID("app", key) {
			t.Fatal("namespace=app not applied")
		}
		mustRelease(t, ls)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := s.admin(t).QueryRow(ctx, "SELECT count(*) FROM pg_class WHERE relname = 'app_fence'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("fence_sequence=public.app_fence not created: %d %v", n, err)
	}
}
