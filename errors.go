package distlock

import "errors"

// Sentinel errors. Backends wrap them, so test with errors.Is.
var (
	// ErrNotAcquired: the key is held by someone else (TryAcquire), or
	// the context ended before it could be acquired (Acquire; then the
	// error also matches ctx.Err()).
	ErrNotAcquired = errors.New("distlock: not acquired")

	// ErrLeaseLost: the lease expired, was taken over or revoked, or its
	// backend session ended. The holder must stop acting as the owner.
	ErrLeaseLost = errors.New("distlock: lease lost")

	// ErrReleased: the lease was released by its holder.
	ErrReleased = errors.New("distlock: lease released")

	// ErrClosed: the Locker was closed.
	ErrClosed = errors.New("distlock: locker closed")

	// ErrInvalidArgument: an empty key, a TTL <= 0, a malformed URL,
	// an unknown scheme or query parameter, or an invalid option.
	ErrInvalidArgument = errors.New("distlock: invalid argument")

	// ErrUnavailable: the backend could not be reached or did not
	// answer in time; whether the operation took effect may be unknown.
	ErrUnavailable = errors.New("distlock: backend unavailable")

	// ErrNotSupported: the Locker cannot do what was asked (for
	// example Inspect on a backend that does not implement Inspector);
	// the error names the operation and the backend.
	ErrNotSupported = errors.New("distlock: not supported")
)
