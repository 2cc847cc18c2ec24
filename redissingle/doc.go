// Package redissingle is the single-Redis backend: one lock is one key, set
// with SET NX PX and released by a compare-and-delete script, over any
// go-redis UniversalClient (standalone, Sentinel failover, Cluster). New
// takes a client the caller owns; a "redis://" or "rediss://" URL opens a
// Locker that owns its client.
//
// # Keys
//
// A key is any byte string of 1 to MaxKeyLen (distlock.MaxKeyLen, 4096)
// bytes whose Prefix + key does not contain "distlock:", the mark of the
// Lockers' own keys and channels; NUL, invalid UTF-8 and braces are
// accepted. The lock is the Redis key Prefix + key, bytes as given; its
// wait queue is Prefix + "distlock:{T}:q:" + key, where T is a
// 3-character tag in the lock's Cluster hash slot (braces in the key move
// the lock's slot and T follows them); the fence counter is Prefix +
// "distlock:fence", or Prefix + "distlock:{T}:fence" in Cluster (see
// keys.go and docs/keys.md, whose golden names TestKeyLayoutGolden pins).
// A Prefix may not contain braces. Lockers whose prefixes are not
// prefixes of one another share no state. A refused key fails with
// distlock.ErrInvalidArgument before any request.
//
// # Acquire
//
// TryAcquire makes one attempt (SET NX PX and the fence in one script, one
// round trip) and fails with an error matching distlock.ErrNotAcquired if
// the key is held. Blocked Acquire calls queue on the server and are
// handed the lock by the release itself: the release script gives the key
// to the first waiter and notifies only that waiter's Locker over pub/sub,
// so a hand-off costs the same few commands however many clients wait,
// and waiters are served in arrival order. Expired holders and lost
// notifications are caught by polling at the holder's remaining TTL, at
// least every Options.PollInterval. When the context ends first, the error
// matches distlock.ErrNotAcquired and the context's error.
//
// # Fencing
//
// Each acquisition mints its fence in the same script that takes the key,
// from one counter per server (one per hash slot in Cluster), so fences
// strictly increase across the holders of a key while the server keeps
// its data (distlock.FenceMonotonic). They go back after a restart without
// persistence, the eviction of the counter, or a failover to a replica
// that lacks the latest increments: see "Operating the server".
//
// # Failures
//
// A single Redis is not fault tolerant (see Locker.Guarantees). While the
// server cannot be reached or cannot serve (loading, read-only, out of
// memory), calls fail with an error matching distlock.ErrUnavailable and
// a blocked Acquire keeps trying at the retry delay. A request whose reply
// is lost may have taken the key: a background clean-up releases it. A
// lease whose extension finds the key gone or someone else's ends with
// distlock.ErrLeaseLost. With Options.WaitReplicas, an acquisition too few
// replicas acknowledge is released and fails with a *ReplicationError.
// A server that may evict keys is refused with an error matching
// distlock.ErrInvalidArgument unless Options.AllowEviction is set.
//
// # Inspection
//
// The Locker is a distlock.Inspector (distlock.Inspect, List,
// ForceRelease), reading the lock key and its wait queue in one script.
// In LockInfo, Held is true while the lock key exists (no acquisition
// can take it then, whatever it holds); Holder is the distlock.HolderID
// of the token in its value; Fence is the holder's fence where the value
// carries it ("token:fence", written when the key passes to a queued
// waiter), else 0: a holder that took a free key keeps its fence
// only in its lease, so Fence is not always the lease's. TTL is the lock
// key's PTTL, distlock.NoExpiry if it has none. Waiters is the length of
// the wait queue, which also counts, until their clean-up or the queue's
// expiry, entries of waiters that gave up or whose process died. Leak
// names state no holder can release, or that never expires: a lock key
// without expiry (one set by hand without PX, say), one holding another
// Redis type or a value without a token, a wait queue without expiry or
// of another type; ForceRelease clears each of them. The fence counter
// never expires, by design, and is not a leak.
//
// ForceRelease does, whoever holds the key, what its holder's release
// would: it hands the key to the first live waiter, woken at once, or
// deletes it. The fence counter is kept, so fences stay monotonic. The
// evicted lease is not told: its Done fires at its own deadline (or at
// its watchdog's next extension), and its Extend and Release fail with
// distlock.ErrLeaseLost without touching the next holder.
//
// List walks the database with SCAN ... TYPE string (Redis 6.0 or
// later), up to about a million keys per server. With an empty Prefix
// every string key of the database may be a lock, and is listed (one
// without expiry as a leak): give the Locker a Prefix to list only its
// locks.
//
// Labels are not stored: distlock.WithLabel is checked and ignored, and
// LockInfo.Label is "". A label would need a key of its own, set with the
// same expiry by every acquisition script and hand-off, extended and
// deleted with the lock by every extension, release and clean-up: a change
// to each script of the lock's life for an operator's view.
//
// # URL
//
// redis://[user:password@]host:port[/db][?params], or rediss:// for TLS.
// Parameters: ttl, autoextend, retry_min, retry_max (every backend's),
// prefix, wait_replicas, wait_timeout, poll_interval and allow_eviction
// (see Options), and every go-redis option redis.ParseURL accepts
// (dial_timeout, pool_size, ...). Unknown parameters are rejected with an
// error matching distlock.ErrInvalidArgument.
//
// # Operating the server
//
// A lock is only as good as the server's memory of it. Three settings
// decide that.
//
// Eviction. With maxmemory set, a volatile-* maxmemory-policy lets Redis
// evict keys that have a TTL when memory runs short: a held lock can
// vanish before its TTL, and another client then takes it while the
// holder still acts. An allkeys-* policy can also evict the fence counter,
// after which fences start again from 1 and a fenced resource accepts a
// stale holder. Use maxmemory-policy noeviction: no key is lost, and while
// memory is full acquisitions fail with an error matching
// distlock.ErrUnavailable (a blocked Acquire keeps trying), while held
// locks can still be extended and released.
// Before its first acquisition a Locker reads the settings (CONFIG GET
// maxmemory*) and refuses to work with such a server (ErrInvalidArgument,
// naming the policy) unless Options.AllowEviction or allow_eviction=true
// accepts the risk. A server that refuses CONFIG, as many managed services
// do, cannot be checked: set the policy in the provider's parameters.
//
// Persistence. Locks and the fence counter live in the server's memory.
// A restart without persistence forgets them: every key is free at once
// while the holders before the restart still act until their TTL, and
// fences start again from 1. RDB snapshots lose the writes since the last
// snapshot when the server stops, appendfsync everysec those since the
// last fsync when its machine does, fence increments among them. For
// fences that never go back, run appendonly yes with appendfsync always;
// to keep exclusion across a restart of a server without it, keep the
// restarted server out of service for longer than the longest TTL. This
// is not detected.
//
// Failover. Replication is asynchronous: a replica promoted by Sentinel or
// Cluster may lack the latest locks and fence increments, with the same
// effects. Options.WaitReplicas narrows this window but does not close it.
package redissingle
