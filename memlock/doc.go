// Package memlock is the in-process backend: full lease semantics (TTL
// expiry, fences, lost-lease notification, blocking waits woken by the
// release itself) inside one process, with no server. It is the embedded
// default, the backend of the README example and of the conformance
// suite's self-test.
//
// Keys live in a space. New makes a private space; NewHandle opens another
// client on the same space, and every Locker opened from the same URL
// shares one process-wide space. Clients on one space contend on the same
// keys; each has its own Close.
//
// # Keys
//
// A key is any byte string of 1 to distlock.MaxKeyLen bytes (NUL, invalid
// UTF-8 and path syntax included), used as given as the key of its
// space's map: distinct keys are distinct locks, and spaces (tenants)
// share nothing. An empty or longer key is refused with
// distlock.ErrInvalidArgument before the space is touched (docs/keys.md).
//
// # Acquire
//
// TryAcquire takes a free key at once or fails with an error matching
// distlock.ErrNotAcquired. Acquire queues the caller on the key: the
// release, expiry or revocation of the key wakes the first waiter, which
// then tries again (waiters never poll, so WithRetryDelay has no effect).
// When the context ends first, the error matches distlock.ErrNotAcquired
// and the context's error.
//
// # Fencing
//
// One counter per space mints the fences, so fences strictly increase
// across the successive holders of every key of a space
// (distlock.FenceMonotonic). The counter lives as long as the process: a
// new space starts again from 1.
//
// # Failures
//
// There is no server to lose and one clock, so the only way to lose a
// lease is to let it run out (its TTL passes without an extension) or to
// have it revoked (Locker.Revoke, as an operator would). Either way Done
// fires and Err matches distlock.ErrLeaseLost, before the key can be
// granted to anyone else. A holder goroutine that stalls past its TTL
// still overlaps the next holder: check Done or ValidUntil, or have the
// resource check the fence (package fencing).
//
// # Inspection
//
// Locker implements distlock.Inspector. Inspect reports the holder's
// fence, its label (distlock.WithLabel), distlock.HolderID of its token,
// the time left of its TTL and the number of blocked Acquire calls queued
// on the key by every client of the space. List pages through the held
// keys in key order. ForceRelease is Revoke behind the Inspector
// interface. An in-process space has no state that outlives its holder,
// so Leak is always empty.
//
// Errors are the root sentinels of package distlock, wrapped; memlock
// exports none of its own. With no server to miss, the backend itself
// never reports distlock.ErrUnavailable (a Lease's Extend does when its
// context ends while it waits for the watchdog's extension in flight).
//
// # URL
//
// mem:// opens a client on the default process-wide space and mem://NAME
// on the space called NAME. Parameters: ttl, autoextend, retry_min and
// retry_max (every backend's; see distlock.Options). Unknown parameters
// and a path (mem://NAME/path) are rejected with an error matching
// distlock.ErrInvalidArgument.
package memlock
