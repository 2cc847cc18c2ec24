package pgadvisory_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/pgadvisory"
)

// golden are KeyID values that must never change: a build computing
// different IDs would not exclude a process running an older build. They
// agree with an independent SHA-256 (Python's hashlib).
var golden = []struct {
	namespace, key string
	id             int64
}{
	{"distlock", "", -166951845074169590},
	{"distlock", "invoice:42", -5645875003842982162},
	{"distlock", "ключ/é", 7308387708293518808},
	{"app", "invoice:42", -6942687525813564447},
	{"", "", 7940984811893783192},
}

// TestKeyIDGolden: KeyID gives the golden values.
func TestKeyIDGolden(t *testing.T) {
	for _, g := range golden {
		if got := pgadvisory.KeyID(g.namespace, g.key); got != g.id {
			t.Errorf("KeyID(%q, %q) = %d, want %d", g.namespace, g.key, got, g.id)
		}
	}
	if pgadvisory.KeyID("a", "bc") == pgadvisory.KeyID("ab", "c") {
		t.Fatal("namespace and key run together: the separator is missing")
	}
}

// TestKeyIDSQL: the server computes the same IDs with KeyIDSQL, and a lock
// taken by the Locker is the one pg_locks shows under that ID.
func TestKeyIDSQL(t *testing.T) {
	s := startPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := s.admin(t)
	for _, g := range golden {
		var id int64
		if err := admin.QueryRow(ctx, "SELECT "+pgadvisory.KeyIDSQL, g.namespace, g.key).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if id != g.id {
			t.Errorf("KeyIDSQL(%q, %q) = %d, want %d", g.namespace, g.key, id, g.id)
		}
	}
	l := s.locker(t, "a", &pgadvisory.Options{Namespace: "app"})
	ls := mustAcquire(t, l, "invoice:42")
	defer mustRelease(t, ls)
	if held, _ := s.holders(t, -6942687525813564447); len(held) != 1 {
		t.Fatalf("pg_locks shows %d holders of the golden ID", len(held))
	}
	// An application's own pg_try_advisory_lock on the same ID is excluded.
	var got bool
	if err := admin.QueryRow(ctx, "SELECT pg_try_advisory_lock("+pgadvisory.KeyIDSQL+")", "app", "invoice:42").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got {
		t.Fatal("the application's own advisory lock on the key's ID was granted while the lease held it")
	}
}
