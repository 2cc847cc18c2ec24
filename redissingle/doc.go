// Package redissingle is the single-Redis backend: one lock is one key, set
// with SET NX PX and released by a compare-and-delete script, over any
// go-redis UniversalClient (standalone, Sentinel failover, Cluster). New
// takes a client the caller owns; a URL (redis://, rediss://, and the
// +sentinel and +cluster forms, see Connections) opens a Locker that owns
// its client.
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
// # Connections
//
// New takes a go-redis client the caller builds and owns, so TLS and ACL
// credentials are set there: redis.Options.TLSConfig, Username and
// Password (the same fields of redis.FailoverOptions, plus
// SentinelUsername and SentinelPassword for the Sentinels, and of
// redis.ClusterOptions). Options has no connection fields. A URL opens
// a client the Locker owns, in one of three forms:
//
//	redis://[[user]:password@]host[:port][/db][?params]
//	redis+sentinel://[[user]:password@]s1[:port],s2[:port]/master[/db][?params]
//	redis+cluster://[[user]:password@]h1[:port],h2[:port][?params]
//
// The schemes rediss, rediss+sentinel and rediss+cluster turn TLS on.
// The first form is one server (default localhost:6379, db 0); the second
// asks the Sentinels (default port 26379) for the master named by the
// path and follows its failovers (go-redis's failover client); the third
// is a Redis Cluster seeded by the nodes listed (default port 6379; db 0
// only). go-redis's own ParseFailoverURL and ParseClusterURL read a
// plain redis:// URL with repeated addr parameters, and take the Redis
// password of a Sentinel setup from a query parameter: distinct schemes
// keep a Sentinel or Cluster URL from being read as a single server's,
// and keep the data password in the userinfo, which url.Redacted hides.
// Several hosts are comma-separated; an IPv6 address, in brackets, can
// only be the single host (net/url refuses a list of them).
//
// Credentials are read as redis-cli reads them: user:password@ is an ACL
// user, :password@ or password@ the password of the default user;
// special characters are %-escaped. With Sentinel they are those of the
// Redis servers; the Sentinels' own are the parameters sentinel_username
// and sentinel_password (default: none). A query parameter is not
// hidden by url.Redacted: keep such a URL as secret as the password.
//
// TLS parameters (any of them turns TLS on, as does an rediss scheme):
// tls=true|false; tls_ca=FILE, the PEM CAs to trust (default: the
// system's roots); tls_cert=FILE and tls_key=FILE, a client certificate
// for a server run with tls-auth-clients; tls_server_name=NAME, the name
// to verify the certificate against (default: each host dialled, as
// crypto/tls does; with Sentinel that is the master's address as the
// Sentinels announce it, often an IP address the certificate must
// carry); tls_insecure_skip_verify=true accepts any certificate (tests
// only). TLS 1.2 or newer. The same configuration serves Sentinels and
// Redis servers, or every Cluster node. Files are read by Open: a missing
// file, a file without a PEM certificate, or tls_cert without tls_key
// fail Open with an error matching distlock.ErrInvalidArgument.
//
// Other parameters: ttl, autoextend, retry_min, retry_max (every
// backend's), prefix, wait_replicas, wait_timeout, poll_interval and
// allow_eviction (see Options), and every parameter go-redis's parser of
// the form accepts (dial_timeout, read_timeout, pool_size, max_retries,
// ...), except those that would say a thing twice or route the Locker to
// replicas: username, password, skip_verify (use
// tls_insecure_skip_verify), addr and master_name (the host list and the
// path say them), db with Sentinel or Cluster, or on a single server
// together with a /db path, and replica_only, use_disconnected_replicas,
// route_by_latency, route_randomly and read_only (locks are read and
// written on masters only). Unknown or refused parameters, a second
// host in redis://, a Sentinel URL without master name, a Cluster URL
// with a database, all fail Open with one line matching
// distlock.ErrInvalidArgument that never quotes the userinfo or the
// query.
//
// Open does no I/O: wrong credentials or TLS settings are the error of
// the first acquisition (the eviction check, see Options.AllowEviction,
// is its first request), and of every request after. Whichever way the
// client was built, they match distlock.ErrUnavailable, name
// redissingle, and say:
//
//   - "authentication failed for user "app"" (the default user is named
//     "default"): a wrong password, an unknown or disabled user, or no
//     credentials for a server that wants them (WRONGPASS, NOAUTH); it
//     matches distlock.ErrAccessDenied;
//   - "TLS: the server's certificate was refused": not signed by a
//     trusted CA, or not valid for the server name; distlock.ErrTLS;
//   - "TLS: the server refused the handshake": typically a server that
//     requires a client certificate and got none; distlock.ErrTLS;
//   - "TLS settings may not match the server": a TLS client whose server
//     does not speak TLS (it fails the handshake at once: distlock.ErrTLS;
//     or never answers it: the error is then a timeout, which says so),
//     or a plaintext client whose server closes the connection.
//
// A blocked Acquire returns distlock.ErrAccessDenied and distlock.ErrTLS
// at once, as no retry fixes them. A handshake timeout and a closed
// connection look like a slow or restarting server: they match only
// distlock.ErrUnavailable, and a blocked Acquire keeps trying until its
// context ends, its error then including the last failure.
//
// No error, and no String of a Locker (which names its addresses, db,
// user, TLS and Prefix), contains a password. An ACL user needs the
// commands the Locker runs: EVALSHA and EVAL, and within its scripts
// SET, GET, DEL, EXISTS, TYPE, APPEND, INCR, PEXPIRE, PTTL, LLEN, LPOP,
// LPOS, LREM, RPUSH, RPUSHX and PUBLISH; SUBSCRIBE, PING, WAIT (with
// WaitReplicas), SCAN (List), CONFIG GET (the eviction check, skipped if
// refused); on the keys Prefix + "*" and the channels Prefix +
// "distlock:w:*". Another refused command fails with an error naming the
// user and this section.
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
