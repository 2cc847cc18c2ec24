package migrate_test

import (
	"testing"

	"github.com/distlock/distlock/memlock"
	"github.com/distlock/distlock/migrate"
)

// TestTypedNil: New refuses a nil Locker held in a non-nil interface.
func TestTypedNil(t *testing.T) {
	f := newFleet(t)
	var m *memlock.Locker
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("New with a typed-nil Locker panics: %v", r)
		}
	}()
	_, err := migrate.New(m, f.to.NewHandle(), migrate.Options{Phase: migrate.PhaseBoth})
	t.Logf("err %v", err)
}
