// Package redissingle is the single-Redis backend: one lock is one key, set
// with SET NX PX and released by a compare-and-delete script, over any
// go-redis UniversalClient (standalone, Sentinel failover, Cluster).
//
// Each acquisition mints a fencing token in the same script (one round
// trip). Blocked Acquire calls queue on the server and are handed the lock
// by the release itself: the release script gives the key to the first
// waiter and notifies only that waiter's Locker over pub/sub, so a hand-off
// costs the same few commands however many clients wait, and waiters are
// served in arrival order. Expired holders and lost notifications are
// caught by polling at the holder's remaining TTL.
//
// Keys are at most MaxKeyLen (1024) bytes, and Prefix + key may not
// contain "distlock:", which names the Lockers' own keys (see
// Locker.Acquire).
//
// URL: redis://[user:password@]host:port[/db][?params], or rediss:// for
// TLS. Parameters: ttl, autoextend, retry_min, retry_max (every backend's),
// prefix, wait_replicas, wait_timeout, poll_interval and allow_eviction
// (see Options), and every go-redis option redis.ParseURL accepts
// (dial_timeout, pool_size, ...). Unknown parameters are rejected.
//
// A single Redis is not fault tolerant: see Locker.Guarantees.
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
// fences that never go back, run
// appendonly yes with appendfsync always; to keep exclusion across a
// restart of a server without it, keep the restarted server out of service
// for longer than the longest TTL. This is not detected.
//
// Failover. Replication is asynchronous: a replica promoted by Sentinel or
// Cluster may lack the latest locks and fence increments, with the same
// effects. Options.WaitReplicas narrows this window but does not close it.
package redissingle
