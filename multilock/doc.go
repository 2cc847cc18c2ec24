// Package multilock holds several keys of one distlock.Locker as one
// lease, all or nothing, over the public interface, so it works on every
// backend.
//
// # Order and deadlock freedom
//
// Acquire and TryAcquire take the keys one at a time in one canonical
// order: sorted bytewise (as Go compares strings). Two callers passing
// overlapping sets in any order therefore never wait on each other in a
// cycle: whoever holds the lowest contended key proceeds to the next one,
// and no caller waits for a key while holding a higher one.
//
// # All or nothing
//
// If a key cannot be taken (held elsewhere for TryAcquire, the context
// ends for Acquire, the backend fails), every key taken so far is
// released, in reverse order, before the call returns. That release runs
// on a context that keeps the caller's values but not its cancellation,
// bounded by CleanupTimeout, so a caller whose context has just ended
// still frees what it took. A release that fails or times out leaves the
// key to expire after its TTL; its error is appended to the one returned.
//
// # The lease
//
// A *Lease implements distlock.Lease over its parts (one lease per key).
// Key joins the keys in canonical order with "," (a display form: use
// Keys for the list), Fence is the first key's fence and Fences or Parts
// give every key's. ValidUntil is the earliest of the parts'. Done fires
// when any part is lost; the other parts are then released at once, and
// Err names the lost key and matches distlock.ErrLeaseLost. One goroutine
// per lease watches the parts; it exits on Release or after the first
// loss has been cleaned up.
//
// Options apply to every part: WithAutoExtend gives each part its own
// watchdog, and is advisable when a blocking Acquire may wait long for a
// later key while the earlier ones run down their TTL.
//
// # Cost, and the atomic forms not used
//
// Taking n keys costs n sequential acquisitions (n round trips on a
// networked backend) and n releases; BenchmarkAcquireRelease and
// BenchmarkRatio8To1 compare 8 keys with 1 on memlock. Several backends have an atomic multi-key form
// that could take the whole set in one round trip: a Lua script over
// keys of one Redis Cluster hash slot (redissingle; redlock per master),
// one etcd transaction comparing and creating every key (etcdlock), one
// ZooKeeper multi creating every node (zklock), and several advisory
// locks taken in one Postgres statement (pgadvisory). This package does
// not use them yet: every backend goes through the canonical order.
package multilock

import "time"

// MaxKeys is the largest set Acquire and TryAcquire accept: 64 keys. A
// larger set is rejected with an error matching
// distlock.ErrInvalidArgument; split it, or lock a coarser key.
const MaxKeys = 64

// CleanupTimeout bounds each release that multilock makes on the
// caller's behalf: of the keys already taken when an acquisition fails,
// and of the remaining parts when a part of a lease is lost. 10 s.
const CleanupTimeout = 10 * time.Second
