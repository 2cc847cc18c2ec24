// Package redlock is the Redlock backend: one lock is the same key on N
// independent Redis masters, held when a majority (N/2+1) took it within
// its validity (the Redlock algorithm).
//
// Every operation is multiplexed: the Locker writes its request to every
// node, then reads every reply, each bounded by the per-node timeout
// (Options.NodeTimeout), over its own RESP2 connections and per-node
// connection pools, so that an acquisition costs about one round trip to
// the slowest live node, and a dead or frozen node at most the timeout.
//
// # Acquire
//
// One random token per acquisition; start is taken before the first
// request; a script on each node does SET key token NX PX ttl and, if it
// took the key, INCRs the node's fence counter. The acquisition holds if
// a majority took the key and the validity ttl - elapsed - drift (drift =
// ttl x DriftFactor + DriftFixed) is still positive; the lease's
// ValidUntil is start + ttl - drift. Otherwise every node that may hold
// the key (all that took it, timed out or failed; not those held by
// someone else) is unlocked, and a blocking Acquire tries again. A node
// that did not answer within the node timeout is unlocked whatever the
// outcome: the unlock is pipelined behind the unanswered request on the
// same connection, so a SET that arrives late can never outlive the
// attempt there. The price: a lease granted while some nodes were slow
// rests on the nodes that answered in time (at least a majority), so
// while it is held, fewer further failures are tolerated for its Extend
// and Release than Guarantees.ToleratedFailures says for acquisitions.
//
// Release is a compare-and-delete on all nodes (a node that answers too
// late is read in the background, its connection kept, so its delete
// still lands; a node the release does not reach is sent it again in the
// background, see Release); Extend a compare-and-PEXPIRE on all nodes,
// which never re-creates a key, confirmed by a majority within the
// remaining validity.
//
// Calls of one Locker on one key take turns locally: only one of them
// talks to the nodes at a time, the others wait in arrival order, and
// TryAcquire fails at once, without I/O, while another call of the same
// Locker holds or is acquiring the key.
//
// A blocked Acquire queues on each node (a sorted set scored by its
// arrival time, so all nodes agree on the order); a release pops the
// first waiter whose Locker is subscribed and PUBLISHes its ID on that
// Locker's channel (one pub/sub connection per node and Locker). Only
// that waiter wakes: once a majority of nodes told it, or 2 ms after the
// first did. A waiter leaves the queues when Acquire returns (won, failed
// or cancelled), in the background; a wake-up that reaches its Locker
// after it stopped waiting is passed on to the next waiter on that node.
// Expired holders and lost messages are caught by a timer: the holder's
// remaining TTL, at most Options.PollInterval, or the random retry delay
// while pub/sub is down on a majority or after a split vote (no herd, and
// contenders desynchronise). When ctx ends, Acquire's error matches
// distlock.ErrNotAcquired and ctx.Err() and keeps the last *QuorumError.
//
// # Fencing
//
// The lease's fence is the largest counter value among the nodes that
// granted it. If some granting node's counter is lower, it is raised
// (counter = max(counter, fence)) in a second round trip, with a node
// timeout of its own, and Acquire hands the lease out only once a
// majority of nodes are known to have a counter at or above the fence;
// otherwise the attempt fails (ErrUnavailable) and unlocks what it took.
// Extend and Release raise any granting node left below. Any two
// majorities share a node, so the next holder's fence is higher, even if
// this holder pauses or crashes right after Acquire returns, as long as
// no node of the majority loses its counter (see Operating requirements).
//
// # Failures
//
// A node that cannot be reached, does not answer within the node timeout
// or answers with an error counts against the majority. An acquisition
// without a majority fails with a *QuorumError naming every other node's
// answer: it matches distlock.ErrNotAcquired when contention explains the
// failure and distlock.ErrUnavailable when outages do (see QuorumError);
// a blocking Acquire then tries again after the random retry delay. Up to
// (N-1)/2 nodes may be down (Guarantees.ToleratedFailures). Extend and
// Release fail with a *QuorumError matching distlock.ErrLeaseLost when too
// many nodes answered that the key is not ours, else
// distlock.ErrUnavailable. A lease whose validity passes unextended is
// lost: Done fires at the local, drift-adjusted deadline. A connection
// that fails mid-reply is dropped; one whose request timed out before any
// byte of its reply is kept and read in the background. After Close,
// every call returns distlock.ErrClosed and leases still held expire with
// their TTL.
//
// # Operating requirements
//
// Lock keys, wait queues and fence counters are ordinary Redis keys, so
// the operator must:
//
//   - Never let a node evict them: run every node with maxmemory-policy
//     noeviction (or without maxmemory). An allkeys-* policy can evict a
//     held lock (a second client then takes the key while the first holds
//     it) or a fence counter (that node's next fences restart low, and a
//     later holder's fence can go backwards); a volatile-* policy can
//     evict a held lock, which always has a TTL (and wait queues, which
//     only costs waiters their push wake-up). Under noeviction a full node
//     refuses writes instead: the Locker sees an error reply and counts the
//     node as unavailable. The Locker checks this one: before its first
//     acquisition it reads each node's maxmemory settings, and while a
//     node may evict, acquisitions fail with distlock.ErrInvalidArgument
//     unless Options.AllowEviction is set (see AllowEviction).
//   - Keep the data across restarts. A node that restarts empty can let a
//     second client lock the key while the first still holds it, and loses
//     its fence counter. The two remedies for exclusion are appendonly yes
//     with appendfsync always on every node, or keeping a crashed node
//     down for at least the largest TTL in use before it rejoins; fences
//     need the first (an RDB snapshot or appendfsync everysec can lose the
//     last increments, and a node that comes back without its counter,
//     however late, can make a later fence lower).
//
// Guarantees reports SurvivesRestart false, and its FenceScope names both
// requirements.
//
// # Keys
//
// The lock of key k is the Redis key Prefix+k. The Locker's own keys (the
// fence counter Prefix+"distlock:fence", the wait queues
// Prefix+"distlock:q:"+k) and channels (Prefix+"distlock:w:"+id) are
// named with "distlock:", so a key whose Prefix+k contains "distlock:" is
// refused with distlock.ErrInvalidArgument, as is a key longer than
// MaxKeyLen (distlock.MaxKeyLen, 4096) bytes, and so is a Prefix
// containing "distlock:" (by New). No key can then name another key's
// internal state, including that of a Locker whose Prefix is not a prefix
// of this one's on the same servers. Any other bytes (separators, NUL,
// invalid UTF-8, braces) make a lock of their own; the names are the
// key's bytes as given (docs/keys.md, TestKeyLayoutGolden). Braces matter
// only to Redis Cluster, which the nodes are not.
//
// N may be any number >= 1. An even N tolerates no more failures than N-1
// (N=4 tolerates 1, like N=3) at a higher cost; prefer odd N.
//
// # Inspection
//
// The Locker is a distlock.Inspector (distlock.Inspect, List,
// ForceRelease). LockInfo.Nodes[i] is node i's view of the lock key: Held
// if the key exists there (the node refuses it to anyone), Holder the
// distlock.HolderID of its value, TTL its PTTL (distlock.NoExpiry if it
// has none), Waiters the length of its wait queue, and Leak when it has
// no expiry or its value is not a token (another Redis type, or empty).
// A node that did not answer within the node timeout has the zero
// LockInfo (Key ""). The fields above Nodes are the quorum view: Held
// when a majority of all N nodes hold one token, Holder that token's id,
// TTL the shortest among those nodes (NoExpiry counting as the longest;
// when not held, NoExpiry if some node's copy never expires, else 0),
// Waiters the largest count a majority of nodes reach, Leak every node's
// leak after its address. Fence is 0: the lock's value is only the token,
// and a node's fence counter is shared by every key, so no node keeps a
// lease's fence. Inspect and List need a majority of nodes to answer,
// else they fail with a *QuorumError matching distlock.ErrUnavailable.
//
// ForceRelease reads the key on every node, then deletes it on every
// node where it still holds what was read, and wakes the next waiter as a
// release does; fence counters are kept, so fences stay monotonic. The
// evicted lease is not told: Done fires at its own deadline (or when its
// watchdog finds the key gone), and its Extend and Release fail with
// distlock.ErrLeaseLost.
//
// List walks each node with SCAN ... TYPE string (Redis 6.0 or later), so
// a lock key holding another type shows in Inspect but not in List. With
// an empty Prefix every string key of the database may be a lock, and is
// listed (one without expiry as a leak): give the Locker a Prefix to list
// only its locks.
//
// Redlock does not store labels: distlock.WithLabel is checked and
// ignored, and LockInfo.Label is "". The lock's value is only the token,
// so that redsync and other Redlock clients exclude and are excluded by
// this Locker; a label would need a key of its own, set, extended and
// deleted in step with the lock by every acquisition, Extend and Release,
// which is work and risk on the acquire path for an operator's view.
//
// # Connections
//
// TLS: Options.TLS makes every connection TLS, verified as crypto/tls
// verifies (RootCAs, nil for the system's roots; client certificates in
// Certificates; InsecureSkipVerify only if set). The Locker clones it, and
// where its ServerName is empty each node's host is the name its
// certificate must carry, so one configuration serves every node.
// Options.NodeTLS(addr), if set, gives each node its own configuration
// instead (nil: that node is plaintext). The handshake is bounded by
// DialTimeout; within an operation the caller waits for it only until the
// node timeout, and a handshake still running then goes on in the
// background, its connection, once ready, serving the node's next
// operation.
//
// Authentication: Options.Username and Password send AUTH Username
// Password (a Redis 6+ ACL user) on every new connection, or AUTH
// Password (the default user, requirepass) without Username. AUTH goes
// out with the connection's first request, so it costs no extra round
// trip. Options' String and GoString, and the Locker's, never print the
// password.
//
// By URL: redlock://user:password@h1,h2,h3?tls=true&tls_ca=ca.pem (and
// tls_cert, tls_key, tls_server_name, tls_insecure_skip_verify): one TLS
// setting for all nodes; per-node settings need Options.NodeTLS. The
// tls_ files are read by distlock.Open, whose errors (unreadable file,
// certificate without key) match distlock.ErrInvalidArgument.
//
// Errors: the Locker connects on first use, so a misconfiguration is the
// error of the first operation. Each node that fails counts as
// unavailable, so the *QuorumError matches distlock.ErrUnavailable and
// names, per node: "authentication as user "alice" failed: WRONGPASS
// ..." (a wrong password and an unknown user look the same: Redis does
// not say which), "the server requires authentication (NOAUTH ...)",
// "TLS: server certificate not accepted (... unknown authority /
// certificate is valid for ..., not ...)", "TLS: refused by the server
// ... check the client certificate", and, for a plaintext client against
// a TLS server (it closes the connection) or a TLS client against a
// plaintext one (it answers in plaintext, or does not answer the
// handshake), a message saying that the TLS settings may not match the
// server. When the nodes refusing the credentials (WRONGPASS, NOAUTH) are
// alone enough to deny the majority, the error also matches
// distlock.ErrAccessDenied; when the nodes with a refused certificate or
// handshake, or answering a handshake in plaintext, are, distlock.ErrTLS.
// No retry fixes those: TryAcquire and a blocking Acquire return them at
// once. A handshake that times out and a connection the server closes
// match only distlock.ErrUnavailable, as a slow or restarting server
// does the same: a blocking Acquire keeps trying until its context ends
// and keeps the last error. No error contains the password.
//
// Not supported: credentials per node (Username and Password are the
// same for all: give each node the same ACL user), a scheme that implies
// TLS (the URL says tls=true or gives a tls_ parameter), and HELLO/RESP3:
// the Locker speaks RESP2 and authenticates with AUTH.
//
// # URL
//
// Importing this package registers the scheme "redlock" with
// distlock.Open: redlock://[user:password@]host1[:port],host2[:port],...
// [/db][?params], where a missing port is 6379 (either every host names
// its port or the last one does). Parameters: ttl, autoextend, retry_min, retry_max
// (every backend's), node_timeout, drift_factor, drift_fixed,
// dial_timeout, prefix, poll_interval and allow_eviction (see Options),
// and the TLS parameters tls, tls_ca, tls_cert, tls_key, tls_server_name
// and tls_insecure_skip_verify (see Connections). Unknown parameters are
// rejected.
package redlock
