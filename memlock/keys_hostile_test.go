package memlock_test

import (
	"testing"

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
		Refused:      keytest.Limit,
		TokenHolders: true,
	})
}
