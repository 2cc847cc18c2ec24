package migrate

import (
	"errors"
	"fmt"

	"github.com/distlock/distlock"
)

// errFirstLost: the old backend's lease ended while PhaseBoth waited for
// the new backend's; Acquire starts over.
var errFirstLost = errors.New("migrate: the old backend's lease ended while waiting for the new backend's")

// invalid returns an error matching distlock.ErrInvalidArgument.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: migrate: "+format, append([]any{distlock.ErrInvalidArgument}, args...)...)
}

// lostOn wraps the Err of a lost inner lease (which matches
// distlock.ErrLeaseLost) with the side that lost it.
func lostOn(side string, cause error) error {
	if !errors.Is(cause, distlock.ErrLeaseLost) {
		cause = errors.Join(distlock.ErrLeaseLost, cause)
	}
	return fmt.Errorf("migrate: %s backend's lease: %w", side, cause)
}
