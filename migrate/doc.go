// Package migrate moves a fleet from one lock backend to another (Redis
// to etcd, ZooKeeper or Postgres, say) without a flag day: every client
// locks through a Locker composed of the old backend's Locker (from) and
// the new one's (to), in a phase set by configuration, and the fleet
// changes phase one step at a time, service by service.
//
// # Phases
//
//	from    locks on the old backend only (what the fleet runs today)
//	shadow  locks on the old backend; mirrors each lease on the new one in
//	        the background, within a budget, and records how the new
//	        backend behaves (ShadowStats, Options.OnShadow); the caller
//	        never waits for it and never sees its errors
//	both    locks on the old backend, then on the new one; valid while both
//	        are; Done fires at the first loss, and the other side is
//	        released at once; released in reverse order
//	to      locks on the new backend only
//
// # Which phases may run side by side
//
// Two clients exclude each other when there is one lock both of them wait
// for. That holds for any two adjacent phases (Adjacent):
//
//	from + shadow   both wait for the old backend's lock
//	shadow + both   both wait for the old backend's lock
//	both + to       both wait for the new backend's lock
//
// It does not hold two steps apart: from + both would be safe by the same
// argument, but shadow + to is not (shadow holds the new lock only when
// the mirror happens to succeed), and from + to share nothing. So a fleet
// must never span more than two adjacent phases. In a mixed fleet,
// exclusion is as strong as the shared backend's: Guarantees describes
// clients of this one phase among themselves.
//
// # Runbook
//
// Roll forward one step at a time: from, shadow, both, to. A step is a
// configuration change (the phase parameter of the migrate:// URL)
// deployed service by service. Before starting step k+1, step k must be
// complete: every client runs phase k, and no client of phase k-1 can
// still hold a lease, which means waiting, after the last client of phase
// k-1 restarted, for the longest lease it could hold: its TTL, or its
// maximum hold under automatic extension (WithAutoExtend). An operator
// knows a step is complete from the deployment (all instances report the
// new phase, for example from Locker.Phase in a health endpoint) plus that
// wait. Watch ShadowStats during shadow: contention or failures on the new
// backend that the old one does not see are what to fix before both.
// Rolling back is the same steps in reverse.
//
// # Fences
//
// Lease.Fence is the old backend's fence in from, shadow and both, and
// the new backend's in to. The two backends' fences cannot be compared,
// and no single number can be ordered against both neighbours of phase
// both, so a fenced resource must check fence pairs before any client
// enters phase to: Fences gives a lease's pair (From, To; 0 where the lease
// does not hold that side), and fencing.PairGuard or fencing.PairRegister
// admits a write only if each side it carries is at least that side's
// highest. In every adjacent fleet the shared lock's side strictly
// increases across holders, so an earlier holder's write never lands
// after a later holder's. On the forward roll no current holder is
// refused either: the old side comes only from holders of the old lock,
// the new side only from holders of the new lock. A resource switching
// from single fences to pairs seeds the old side with the highest fence it
// had accepted (fencing.PairRegister.Seed). After the roll it may keep
// checking pairs, or go back to single fences starting from the highest
// new side.
//
// # Waiting in phase both
//
// A both client waits for the old lock, then for the new one while
// holding the old. It holds the old lock for that second wait at most as
// long as the old lease was valid when the wait began (about one TTL, even
// under automatic extension), then releases it and starts over, so a busy
// new lock does not keep the old one from the rest of the fleet.
// BothStats measures those waits: how many, how many were given up, and
// how long the old lock was held during them.
//
// # URL
//
//	migrate://?from=<URL>&to=<URL>&phase=from|shadow|both|to[&shadow_budget=1s][&cleanup_timeout=5s]
//
// from and to are complete Locker URLs, query-escaped (url.QueryEscape),
// so their own parameters keep working. The composite opens both with
// distlock.Open and owns them.
package migrate
