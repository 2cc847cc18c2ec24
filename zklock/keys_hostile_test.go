package zklock_test

import (
	"testing"

	"github.com/distlock/distlock/internal/keytest"
	"github.com/distlock/distlock/zklock"
)

// Tenant prefixes of the hostile-key table.
const (
	tenantA = "/tenantA"
	tenantB = "/tenantB"
)

// TestHostileKeysTable runs the hostile-key table (docs/keys.md) on a real
// ensemble: a key is any byte string of 1..MaxKeyLen bytes, escaped into
// one path component; tenants are Lockers with different prefixes.
func TestHostileKeysTable(t *testing.T) {
	e := startEnsemble(t)
	keytest.Run(t, keytest.Backend{
		A1: e.locker(t, "a1", &zklock.Options{Prefix: tenantA}),
		A2: e.locker(t, "a2", &zklock.Options{Prefix: tenantA}),
		B:  e.locker(t, "b", &zklock.Options{Prefix: tenantB}),
		Cases: append(keytest.Common(),
			keytest.Case{Name: "recipe node name", Key: "_c_00000000000000000000000000000000-lock-0000000001"},
			keytest.Case{Name: "sequence name", Key: "lock-0000000001"},
			keytest.Case{Name: "zookeeper", Key: "zookeeper"},
			keytest.Case{Name: "escaped dot", Key: "%2E"},
			keytest.Case{Name: "escaped dot dot", Key: "%2E%2E"},
			keytest.Case{Name: "lower-case escape", Key: "%2f"},
			keytest.Case{Name: "the other tenant's prefix", Key: tenantB},
		),
		Refused:      keytest.Limit,
		TokenHolders: true,
	})
}

// TestKeyPathGolden pins the escaping of a key into its lock's path, which
// two versions (and Curator clients given Locker.Path) sharing a lock must
// agree on: ASCII letters, digits and "-_.~:@" stay, every other byte is
// "%" and two upper-case hex digits, and "." and ".." are escaped whole.
func TestKeyPathGolden(t *testing.T) {
	l, err := zklock.New([]string{"127.0.0.1:1"}, &zklock.Options{Prefix: tenantA})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for key, want := range map[string]string{
		"a":               "/tenantA/a",
		"a/b":             "/tenantA/a%2Fb",
		"a/../b":          "/tenantA/a%2F..%2Fb",
		".":               "/tenantA/%2E",
		"..":              "/tenantA/%2E%2E",
		"...":             "/tenantA/...",
		"%2E":             "/tenantA/%252E",
		"\x00":            "/tenantA/%00",
		"\xff\xfe":        "/tenantA/%FF%FE",
		"{x}":             "/tenantA/%7Bx%7D",
		"Key":             "/tenantA/Key",
		"e\u0301":         "/tenantA/e%CC%81",
		"\u00e9":          "/tenantA/%C3%A9",
		" ~:@-_":          "/tenantA/%20~:@-_",
		"lock-0000000001": "/tenantA/lock-0000000001",
	} {
		if got := l.Path(key); got != want {
			t.Errorf("Path(%q) = %q, want %q", key, got, want)
		}
	}
}
