package memlock

import "errors"

// Causes joined with distlock.ErrLeaseLost in a lost lease's Err.
var (
	// errExpired: the key's TTL passed without an extension.
	errExpired = errors.New("memlock: key expired")
	// errRevoked: Locker.Revoke freed the key behind its holder.
	errRevoked = errors.New("memlock: key revoked")
)
