// Package zklock is the ZooKeeper backend: the lock recipe of Apache
// Curator's InterProcessMutex over go-zookeeper, with contexts,
// TryAcquire, session-aware leases that report their loss, and fences
// that are ZooKeeper transaction ids.
//
// # Keys
//
// A key is any non-empty byte string of at most MaxKeyLen
// (distlock.MaxKeyLen, 4096) bytes; each byte outside ASCII letters,
// digits and "-_.~:@" is percent-encoded ("%" and two upper-case hex
// digits; "." and ".." whole), so every key is one path component of its
// own, Locker.Path(key) (golden values are tested). A longer key is
// refused with distlock.ErrInvalidArgument before any request. Lockers
// share no state unless one's Prefix lies under the other's: a Prefix
// /p/x puts its locks under the lock node of key "x" of Prefix /p, so
// tenants' prefixes must not nest (docs/keys.md).
//
// # Acquire
//
// A lock is the parent node Prefix/escape(key) (a container node, which
// the server deletes once its last child is gone, so parents do not
// accumulate); each holder or waiter owns one protected ephemeral
// sequential child, _c_<guid>-lock-<seq>, where the GUID is the lease's
// token. The lowest sequence number holds the key; every other waiter
// watches only the node just before its own, so a release wakes exactly
// one waiter (FIFO, no herd). A create whose reply is lost is found again
// by its GUID and deleted, as is every node of an acquisition that fails,
// is cancelled or gives up (at once, or by the Locker's clean-up goroutine
// once the session is connected again). A Curator InterProcessMutex on
// Locker.Path(key) contends with the Locker.
//
// # Fencing
//
// The fence is the czxid of the holder's own node, the transaction id of
// its creation: global, durable and strictly increasing across holders,
// also when the parent is deleted and created again (the sequence suffix
// would start over). Locker.MultiIfHeld goes further: it applies ZooKeeper
// writes only while the lease's node exists.
//
// # Sessions and TTLs
//
// A lock node lives as long as the session that made it. With
// Options.SessionTimeout 0 (the default) every distinct TTL gets its own
// session (one connection) whose timeout is that TTL, opened on first use
// and kept until Close: a holder that dies or is cut off frees the key
// about one TTL later, when the ensemble expires its session. Most
// applications use one TTL and so one session; lockers that share a
// Locker with different TTLs get one session each (at most
// Options.MaxSessions). With Options.SessionTimeout set, every call
// shares one session of that timeout and a lease is additionally bounded
// by it. The ensemble may grant a timeout other than the one asked
// (between its minSessionTimeout and maxSessionTimeout, by default 2 and
// 20 ticks); the Locker reads the negotiated value from the connect reply
// and uses it.
//
// # Validity
//
// A lost connection suspends the lease and an expired session loses it.
// A lease's ValidUntil is the start of the last request that confirmed
// the node through the leader (the acquisition's create or a sync,
// followed by the listing; each extension's sync, followed by a read of
// the node) plus the least of the TTL, SafeFraction x negotiated timeout,
// and 2/3 x negotiated timeout - TickTime/2 - drift: the ensemble cannot
// expire the session before that. The leader expires a session a timeout
// after the last activity it was told of; a server relays activity on its
// next tick and the client pings every third of the timeout, so the last
// activity the leader knows of can be a third of the timeout and half a
// tick older than that request (Options.TickTime must be at least the
// ensemble's tickTime). A read alone would not do: a follower cut off
// from the leader answers reads from its own copy for up to syncLimit
// ticks while the leader expires the session.
//
// # Failures
//
// Extensions (Extend, or the watchdog of WithAutoExtend every third of
// the validity) fail while disconnected or while the server cannot reach
// the leader, and the lease runs out on its own, before the session can
// expire. Done fires when the validity runs out, when the node's deletion
// is seen (a watch on the own node: an operator deleting it revokes the
// lease), or when the session is known or presumed expired (no byte from
// any server for a whole session timeout); Err then matches
// distlock.ErrLeaseLost and ErrNodeDeleted, ErrSessionExpired or
// ErrSessionPresumedExpired. A lease that runs out without extension has
// its node deleted, so the key is free after the TTL as on every backend,
// although the session lives on.
//
// A blocked Acquire whose session ends while it waits in the queue
// returns a *SessionError (distlock.ErrUnavailable) at once rather than
// waiting on; connection errors before it queued are retried. Close ends
// the sessions: held leases are lost with distlock.ErrClosed, waiters
// return distlock.ErrClosed.
//
// # Inspection
//
// The Locker is a distlock.Inspector. Inspect syncs and reads the lock
// nodes of a key in queue order: the lowest sequence number holds the
// key. LockInfo.Holder is distlock.HolderID of the GUID in that node's
// name, which is the lease's token (a Curator client's protected node
// gives the HolderID of its UUID, an unprotected one "session 0x<id>" of
// its owning session, a node no session owns "node <name>"); Fence is the
// node's czxid, as the lease's; Label is the node's data, where the
// Locker stores distlock.WithLabel (a Curator client stores its own,
// its IP address by default; data that is no valid label reads as "").
// TTL is 0: a node lives as long as its session, and the session's
// remaining time is not readable. Waiters counts the other lock nodes
// (the first 64 are read, the rest counted). A lock node that is not
// ephemeral (made by hand) never goes away: it is a Leak, and TTL is
// distlock.NoExpiry when it holds the key. Empty parents are not leaks:
// the server deletes them as container nodes. List reads the children of
// Prefix, maps each back to its key (names that are no key's escape are
// skipped) and returns the held keys in bytewise key order. ForceRelease
// deletes the holder's node and every leaked one: the next waiter's
// watch wakes it, and the evicted lease's watch on its own node fires its
// Done. Without a deadline on the context, each call waits at most
// ConnectTimeout for a session and a session timeout for its requests.
//
// # Connections
//
// Credentials are ZooKeeper's digest scheme: Options.Username and
// Password, or the URL's user:password. Every session sends them
// (AddAuth) before the Locker's first request on it; go-zookeeper sends
// them again first on every reconnection, to the same session or a new
// one after an expiry. ZooKeeper accepts any digest credentials: it has
// no password to check, only ACLs that name the digest of user:password.
// With credentials, every node the Locker creates (lock nodes, the
// container nodes of keys, missing ancestors of the prefix) gets
// DefaultACL: all permissions to the user, read to everyone, so that
// operators and other users can see who holds (Inspect, List, zkCli) but
// cannot delete, change or queue on a lock; Options.ACL replaces it
// (without credentials the default is world:anyone with all
// permissions). Every Locker that contends for a key must therefore use
// the same user, or an ACL that grants each user all permissions on the
// key's container node, which whoever creates it first sets. Deleting a
// lock node takes DELETE on its parent, so another user's ForceRelease
// fails (distlock.ErrAccessDenied); a Locker of the same user can
// force-release.
//
// DefaultACL names the digest of user:password, so the password is part
// of the identity, and rotating it refuses the new credentials
// (distlock.ErrAccessDenied) wherever nodes created under the old one
// stand. Holding or waiting on a key creates a lock node in the key's
// container node, which takes CREATE there; the container carries the
// ACL of the Locker that created it and lives while any holder or waiter
// of the key (any lock node) exists, then until the server's container
// check (znode.container.checkIntervalMs, a minute by default) deletes
// it. Likewise the prefix and its ancestors, when the Locker created
// them, carry the old ACL while any key under them exists, which refuses
// the new credentials on keys not yet there too. To rotate, first give
// every Locker an Options.ACL naming both identities, e.g.
// append(zk.DigestACL(zk.PermAll, user, oldPassword), DefaultACL(user,
// newPassword)...), wait until the nodes created under the old ACL alone
// are gone, then switch the Password; drop the old identity from
// Options.ACL once no Locker uses it.
//
// A request an ACL refuses (NoAuth), refused credentials (AuthFailed)
// and a server with enforce.auth.enabled refusing a session without
// credentials give a one-line error matching distlock.ErrAccessDenied
// (and so distlock.ErrUnavailable) that names the user, never the
// password, e.g. "zklock: create: not authorized as digest user ...";
// Acquire returns it at once. A wrong password shows only where it meets an ACL:
// at the container node of a key the right user created, or at the
// prefix. Since a lock's container node goes once its last lock node
// does, a wrong password can create a key nobody holds under an open
// prefix: to keep others out, create the prefix (persistent) with an ACL
// granting only the users allowed (DefaultACL of each, for instance); the
// Locker then creates below it although it may not create in the
// prefix's parent. A Username containing ':' or a Password without a
// Username is distlock.ErrInvalidArgument. Options and the Locker print
// no password (String, GoString).
//
// Options.TLS (or the URL's tls parameters) dials the servers'
// secureClientPort, which ZooKeeper serves with its Netty connection
// factory (serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory,
// Netty on the server's classpath, ssl.keyStore and ssl.trustStore set).
// The configuration is cloned; without a ServerName each server's host is
// verified. Sessions connect lazily, so TLS problems are the error of the
// first call (Acquire, TryAcquire, Inspect...): distlock.ErrUnavailable
// "no ZooKeeper session within <ConnectTimeout>" followed by the last
// connection's failure, such as the certificate verification error, or a
// hint that the TLS settings may not match the server's when a
// plaintext client meets a TLS port or a TLS client a plaintext one.
// These errors do not match distlock.ErrTLS: go-zookeeper keeps trying
// to connect and reports no error of its own, so the Locker sees only a
// session that did not come, which a server still starting also gives.
// Client certificates (tls_cert, tls_key) are presented when the server
// asks; ZooKeeper's x509 authentication provider, which maps them to ACL
// identities, is not used by the Locker's default ACL.
//
// # URL
//
// zk://[user:password@]host1:2181,host2:2181,host3:2181[/prefix][?params].
// Parameters: ttl, autoextend, retry_min, retry_max (every backend's),
// session_timeout, safe_fraction, tick_time, connect_timeout and
// max_sessions (see Options), and the TLS parameters of every network
// backend: tls, tls_ca, tls_cert, tls_key, tls_server_name,
// tls_insecure_skip_verify. Unknown parameters are rejected.
package zklock
