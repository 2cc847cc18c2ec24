// Package etcdlock is the etcd backend: a lock is a queue of keys under
// the lock's prefix, each attached to an etcd lease, served in the order
// of their create revisions, with the key layout of etcd's
// concurrency.Mutex and `etcdctl lock`, so that this Locker, Mutex users
// and etcdctl exclude each other (a migration needs no flag day).
//
// # Keys
//
// A key is any non-empty byte string of at most MaxKeyLen
// (distlock.MaxKeyLen, 4096) bytes ("/", NUL and invalid UTF-8 included);
// an empty or longer key is refused with distlock.ErrInvalidArgument
// before any request. Lockers whose prefixes are not prefixes of one
// another share no state (docs/keys.md). The lock of key k is the prefix
// Options.Prefix+k+"/"; a client's entry is that prefix followed by its
// etcd lease ID in hex, as Mutex writes it. The entry with the lowest
// create revision holds the lock. The entries of a lock are the keys
// directly under its prefix: the lock of "p/42" lies under "p/" too, one
// level down, and the lock of "p" skips its keys, so that "p" and "p/42"
// are independent locks (see keys.go). A queue read that meets such keys
// reads every key under the prefix created before the caller's entry
// (names only). Mutex and etcdctl wait for every key under the prefix: a
// Mutex on "p" also waits for the holders of "p/42", which delays it but
// never breaks exclusion.
//
// # Sessions
//
// The Locker shares one etcd lease (a session) between its locks and
// waiters of the same TTL, renewed by one goroutine every TTL/10, so a
// client holding many locks holds few leases; a second acquisition of a
// key the Locker already holds or waits for uses another session (its
// entry must differ). Each lock still ends on its own: at its own TTL
// unless extended (its entry is then deleted), on Release, or when its
// session dies. The session's local deadline is the send time of the last
// keepalive the server answered, plus the TTL, minus the drift allowance
// (TTL x 0.01 + 2 ms): the server keeps the lease at least that long, so a
// holder is told (Done) before anyone else can be granted the key. An
// unused session is revoked after one TTL, and at Close.
//
// # Acquire
//
// One transaction creates the entry if absent and reads the entry just
// before it; the call holds the lock if there is none. Otherwise it
// watches only that predecessor (no herd), from the member's current
// revision, so the member serves the watch as soon as the deletion
// commits (a watch from a revision the member has already passed, as
// concurrency.Mutex starts it, waits for etcd's 100 ms catch-up loop); if
// the member had passed the read when the watch started, one point read
// checks that the predecessor is still there. When the predecessor goes,
// one read checks that the caller's entry still exists and that no earlier
// entry is left; it is served by the member (serializable) when the member
// has applied the deletion, since an earlier entry can only go, never
// come, else through the leader. What keeps the lock exclusive until its
// validity is the session's deadline, which caps it. Waiters queue in
// arrival (create revision) order; the order of hand-offs is not promised
// (Guarantees.FIFO is false). TryAcquire writes its entry only if the lock
// is free, so contention leaves nothing behind.
//
// # Fencing
//
// The fence is the create revision of the holder's entry: cluster-wide,
// strictly increasing across holders and durable across restarts and
// leader changes. HeldCmp and TxnIfHeld make a write in etcd conditional
// on the lock still being held (a fence checked by the coordinator
// itself, safe even if the holder was paused past its lease).
//
// # Failures
//
// Each request try is bounded by Options.RequestTimeout (at most TTL/3)
// and a failed try is retried on the member the client picks next, so a
// frozen or cut-off member costs one timeout; a minority of the members
// may fail. A waiter whose session dies (cut off from the cluster for a
// TTL, or its lease revoked) returns ErrSessionExpired at once; a
// cancelled or failed Acquire deletes its entry (in the background if the
// cluster cannot be reached). A holder whose keepalives fail is told the
// lease is lost (Done) at the session's local deadline, before the server
// can expire it; a crashed holder's entry goes when its etcd lease
// expires, a TTL later. An extension or release that finds the entry
// deleted or re-created returns ErrKeyGone.
//
// Grants, keepalives and writes need a leader: while the cluster has none,
// acquisitions fail (and are retried) and keepalives fail. Run etcd with
// pre-vote (--pre-vote, the default from etcd 3.5 on): without it, a member
// cut off from the quorum (partitioned, or left running while the others
// froze) campaigns alone, raising its term, and on its return deposes the
// leader; if its log is behind, it cannot win but forces an election at
// every timeout of its own, so the cluster can stay without a leader for
// several election timeouts.
//
// # Inspection
//
// The Locker is a distlock.Inspector (distlock.Inspect, List,
// ForceRelease), over the lock's entries read at one revision. An entry's
// value is its lease's token, then a space and the label when the
// acquisition gave one (distlock.WithLabel), so a label lives and dies
// with its entry. The holder is the entry with the lowest create
// revision: Fence is that revision (the lease's Fence), Holder
// distlock.HolderID of its token ("etcd-lease:" and the etcd lease ID in
// hex for a concurrency.Mutex or etcdctl entry, whose value is empty),
// Label its label, and Waiters counts the other entries. TTL is the time
// left of the holder's etcd lease, in whole seconds rounded up: that is
// the session's, renewed every TTL/10 while its Locker runs, so it shows
// how long the entry outlives a crash of its holder; the lock's own TTL is
// kept by the holder, which deletes its entry when its validity ends. An
// entry without an etcd lease never expires (TTL distlock.NoExpiry) and
// is a Leak, as is one whose value is neither a token nor empty.
//
// ForceRelease deletes the holder's entry only if it is still the entry
// read (a transaction on its mod revision), without revoking the etcd
// lease, which would end every lock and waiter of the holder's session.
// The next waiter is woken by its watch, with a higher fence. The holder
// does not watch its entry: it learns of the eviction when it next
// extends the lease (its watchdog does every TTL/3) or releases it,
// which fail with ErrKeyGone (distlock.ErrLeaseLost); otherwise Done
// fires at the end of its validity. Until then HeldCmp and TxnIfHeld
// already refuse its writes.
//
// List reads every key under Options.Prefix plus the listed prefix from
// the first that can belong to a lock after the cursor, a thousand at a
// time, because lock names sort differently from their entries; it fails
// with distlock.ErrNotSupported beyond a million keys. With an empty
// Prefix every etcd key with a "/" is an entry of some lock: give the
// Locker a Prefix to list only its locks.
//
// # Connections
//
// New uses the *clientv3.Client it is given: its clientv3.Config carries
// TLS (Config.TLS) and credentials (Username, Password). Dial makes the
// client itself from Options.TLS (cloned; nil: plaintext), Username,
// Password and DialTimeout, and closes it at Close; New refuses those
// fields. A URL configures the same: credentials in the userinfo, TLS by
// the shared parameters tls, tls_ca, tls_cert, tls_key, tls_server_name
// and tls_insecure_skip_verify (any tls_ parameter turns TLS on; there is
// no TLS scheme). Certificates are verified against each endpoint's host
// unless Options.TLS has a ServerName. etcd's client certificate
// authentication works too: with --client-cert-auth and no password, the
// server takes the certificate's common name as the user (etcd 3.4 also
// requires client certificates whenever it has --trusted-ca-file).
//
// With a password, Dial (and so Open) authenticates at once, bounded by
// DialTimeout (default 5 s) and ctx's deadline: a wrong password is its
// error, matching distlock.ErrAccessDenied ("etcdlock: authentication
// failed for user ..."). Otherwise the client connects lazily and a
// problem shows at the first call. The user needs readwrite permission on
// the keys under Options.Prefix (a role granted the range [Prefix, prefix
// end)); without it a call fails at once with distlock.ErrAccessDenied
// ("etcdlock: permission denied: ..."), naming the user and the prefix.
// It matches distlock.ErrUnavailable, as the other refusals do, rather
// than ErrInvalidArgument: the key and options are valid, the fix is a
// grant on the server, and the same URL works once it is made. A client
// without credentials of a cluster with authentication gets
// distlock.ErrAccessDenied too ("... the cluster has authentication
// enabled").
//
// The etcd client reports a connection it cannot make (an untrusted or
// mismatched server certificate, a client certificate the server refuses,
// TLS on one side only) only as a request that timed out, and keeps
// retrying. So until a Locker made by Dial (or a URL) has had a request
// succeed, a try that times out or finds no connection is followed by a
// probe of the endpoints (a TLS handshake or a plaintext HTTP/2 preface,
// at most 2 s) that names the mismatch, as distlock.ErrTLS: for example
// "etcdlock: server certificate rejected ...: x509: certificate signed by
// unknown authority", or "etcdlock: the server did not answer as plaintext
// gRPC and speaks TLS: TLS settings may not match the server".
// distlock.ErrAccessDenied and distlock.ErrTLS end the call at once (no
// retry fixes them: Acquire does not wait for its context) and match
// distlock.ErrUnavailable. Errors never contain the password, and Options'
// String and GoString redact it. A Locker over a client of your own (New)
// recognizes etcd's authentication and permission errors but not TLS
// mismatches, which stay timeouts: it cannot see that client's TLS
// configuration.
//
// # URL
//
//	etcd://[user:password@]host1:2379,host2:2379,...[/prefix][?params]
//
// opens a Locker over a client of its own (Dial), with distlock.Open. A missing
// port is 2379. The path, without its first "/", is Options.Prefix; a
// non-empty prefix that does not end in "/" gets one ("etcd://h/locks"
// locks key k under "locks/k/", as `etcdctl lock locks/k`;
// "etcd://h//locks/" under "/locks/k/"). Parameters: ttl, autoextend,
// retry_min, retry_max (every backend's), request_timeout and
// poll_interval (see Options), dial_timeout (Options.DialTimeout) and the
// tls_ parameters (see Connections). A user name needs a password.
// Unknown parameters are rejected (distlock.ErrInvalidArgument). Opening
// without credentials does no I/O: the client connects on first use;
// with them it authenticates. The Locker's Close closes the client.
package etcdlock
