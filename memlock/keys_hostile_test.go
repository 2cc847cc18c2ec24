package memlock_test

import (
	"testing"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/keytest"
	"github.com/distlock/distlock/memlock"
)

// TestHostileKeysTable runs the hostile-key table (docs/keys.md): a key is
// any byte string of 1..distlock.MaxKeyLen bytes, the map key of its
// space as given; tenants are separate spaces (New, or mem://NAME).
func TestHostileKeysTable(t *testing.T) {
	a1 := memlock.New(nil)
	b := memlock.New(nil)
	t.Cleanup(func() { _ = a1.Close(); _ = b.Close() })
	keytest.Run(t, keytest.Backend{
		A1: a1, A2: a1.NewHandle(), B: b,
		Cases:        keytest.Common(),
		Refused:      refusedKey,
		TokenHolders: true,
	})
}

// refusedKey is the limit memlock names for key, "" if it accepts it.
func refusedKey(key string) string {
	switch {
	case key == "":
		return "empty key"
	case len(key) > distlock.MaxKeyLen:
		return "MaxKeyLen (4096 bytes)"
	}
	return ""
}
