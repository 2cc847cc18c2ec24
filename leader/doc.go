// Package leader runs leader election over any distlock.Locker: among the
// Candidates that campaign for one election key, at most one leads at a
// time (as far as the backend's leases exclude), and it runs the leader's
// work with a context cancelled as soon as its leadership is lost.
//
// A Candidate's Run blocks on a waiting Acquire of the election key with
// the watchdog on (automatic extension). Once it holds the key it is the
// leader: it reports Elected, then runs the work with a Term (the lease's
// fence and the start time). The work's context is cancelled when:
//
//   - the lease is known lost (expired, taken over, revoked, session
//     ended): context.Cause matches distlock.ErrLeaseLost;
//   - Resign is called: context.Cause is ErrResigned;
//   - Run's own context ends: context.Cause is that context's cause.
//
// When the work returns, the lease is released and the Candidate
// campaigns again after a jittered backoff (after Resign, after the
// resign delay instead), until Run's context ends. See Candidate.Run for
// the errors.
//
// A service runs one Candidate per process:
//
//	c, err := leader.NewCandidate(locker, "scheduler", func(ctx context.Context, term leader.Term) error {
//		return schedule(ctx, term.Fence) // until ctx ends
//	}, leader.WithLockOptions(distlock.WithTTL(10*time.Second)))
//	...
//	err = c.Run(ctx) // until shutdown
//
// # Failover
//
// A leader that shuts down (Run's context ends), resigns or whose work
// returns releases the key, and a waiting candidate leads as soon as the
// backend wakes it. A leader that crashes releases nothing: where the
// key carries the TTL (Redis, Redlock, memlock), its lease, extended every
// TTL/3 by the watchdog, runs out between 2/3 of a TTL and one TTL after
// the crash, and then a waiting candidate leads; etcd, ZooKeeper and
// Postgres end it with the crashed client's session or connection (see
// each backend's documentation). The TTL (distlock.WithTTL through
// WithLockOptions) trades failover time against the extension traffic and
// against how long a pause the leader survives.
//
// # Fencing
//
// Term.Fence is the lease's fencing token. Where the backend's fences are
// monotonic (distlock.Guarantees.Fence is distlock.FenceMonotonic), fences
// strictly increase across terms, whichever candidate leads: a resource
// that records the highest fence it has seen (package fencing) rejects a
// deposed leader that has not noticed yet. Leadership is a lease: a
// leader paused past its TTL overlaps the next leader until it sees its
// context cancelled, so work with side effects should carry the fence.
//
// # Observing the leader
//
// A Candidate knows whether it leads (IsLeader, Term), and its observer
// (WithObserver) is told of each change. Other processes learn who leads
// with Observe, which reads the election key's state through
// distlock.Inspect: whether a term is running, its fence and holder id,
// and the identity the leader published with WithIdentity (an address, a
// host name). The identity is stored with the lock as a label
// (distlock.WithLabel) where the backend stores labels; each backend's
// Inspection section says whether it does. Elsewhere Observe still reports
// that someone leads and the term's holder id, and a leader that must be
// found publishes its identity itself, guarded by its fence. A Locker
// without an Inspector makes Observe return distlock.ErrNotSupported.
package leader
