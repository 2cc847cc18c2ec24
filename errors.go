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

	// ErrAccessDenied: the server refused the client's credentials (a
	// wrong user name or password, an unknown user, none given where the
	// server requires them) or refused the user access to the lock's
	// keys or nodes (its permissions or ACLs). No retry fixes it, so calls
	// return it at once instead of retrying; the fix is in the client's
	// credentials or on the server. It also matches ErrUnavailable. The
	// error names the backend and the user, never the password.
	ErrAccessDenied error = &unavailableError{"distlock: access denied"}

	// ErrTLS: no TLS connection could be made because the client's TLS
	// settings do not match the server's: a server certificate the client
	// does not trust or that does not name the host dialled, a client
	// certificate the server requires and did not get or does not trust,
	// or TLS on one side only. No retry fixes it, so calls return it at
	// once instead of retrying. It also matches ErrUnavailable. The error
	// names the backend and what to check.
	ErrTLS error = &unavailableError{"distlock: TLS failure"}
)

// unavailableError is a sentinel that also matches ErrUnavailable, with
// its own text.
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string { return e.msg }

// Unwrap makes errors.Is(err, ErrUnavailable) true.
func (e *unavailableError) Unwrap() error { return ErrUnavailable }
