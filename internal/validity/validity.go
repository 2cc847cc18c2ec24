// Package validity holds the lease validity arithmetic shared by every
// backend: validity is measured from a monotonic instant taken before the
// first request, minus the clock drift allowance, so time spent in flight
// (or paused) is never counted as held time.
package validity

import "time"

// Redlock's reference drift allowance: TTL x 0.01 + 2 ms.
const (
	DefaultDriftFactor = 0.01
	DefaultDriftFixed  = 2 * time.Millisecond
)

// Drift returns ttl*factor + fixed, the allowance for the rate difference
// between the client's and the server's clocks over one TTL.
func Drift(ttl time.Duration, factor float64, fixed time.Duration) time.Duration {
	return time.Duration(float64(ttl)*factor) + fixed
}

// DefaultDrift is Drift with the Redlock reference factors.
func DefaultDrift(ttl time.Duration) time.Duration {
	return Drift(ttl, DefaultDriftFactor, DefaultDriftFixed)
}

// Until returns start + ttl - drift. start must come from time.Now() taken
// before the first request, so it carries a monotonic reading; then the
// result equals now + (ttl - elapsed - drift) whatever the wall clock does.
func Until(start time.Time, ttl, drift time.Duration) time.Time {
	return start.Add(ttl - drift)
}

// Remaining returns how long until validUntil, or <= 0 if it has passed.
func Remaining(validUntil time.Time) time.Duration {
	return time.Until(validUntil)
}
