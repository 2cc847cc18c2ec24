package memlock_test

import (
	"testing"
	"time"

	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/memlock"
)

func TestInspector(t *testing.T) {
	a := memlock.New(nil)
	b, closed := a.NewHandle(), a.NewHandle()
	defer a.Close()
	defer b.Close()
	locktest.Inspector(t, a, b, closed, locktest.InspectTraits{
		HolderIsTokenID: true,
		FenceStored:     true,
		TTLBased:        true,
		Queues:          true,
		StoresLabel:     true,
		MonotonicFence:  true,
		LostWithin:      time.Second,
	})
}
