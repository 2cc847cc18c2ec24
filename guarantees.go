package distlock

// FenceKind says what a backend's fencing tokens promise.
type FenceKind int

const (
	// FenceNone: Fence values are unique but carry no order.
	FenceNone FenceKind = iota
	// FenceMonotonic: fences strictly increase across successive holders
	// of a key while the server that minted them keeps its state; a
	// restart without persistence or a failover to a lagging replica can
	// make them go back (see FenceDurable).
	FenceMonotonic
	// FenceDurable: fences strictly increase across holders, restarts and
	// failovers (a consensus revision, a database sequence).
	FenceDurable
)

// String returns "none", "monotonic" or "durable".
func (k FenceKind) String() string {
	switch k {
	case FenceMonotonic:
		return "monotonic"
	case FenceDurable:
		return "durable"
	default:
		return "none"
	}
}

// Guarantees is what a backend promises, as configured. The conformance
// suite reads it to choose the expected outcome of each fault scenario, and
// README shows it as a table. A false field is a promise not made, not a
// promise of failure.
type Guarantees struct {
	// Backend names the backend ("mem", "redis", "redlock", ...).
	Backend string

	// ClockIndependentSafety: mutual exclusion does not rest on bounded
	// clock drift or bounded process pauses of clients or servers. False
	// for TTL-based locks (Redis, Redlock): a holder paused past its TTL
	// overlaps the next holder unless the resource checks fences.
	ClockIndependentSafety bool

	// ServerClockSafety: no server's wall clock decides when a lease
	// ends: a server whose clock jumps forward does not expire a live
	// lease, and one set back does not keep a dead holder's lock (the
	// servers time sessions on a monotonic clock). Scenarios S20 and S21
	// of docs/conformance.md check it.
	ServerClockSafety bool

	// Fence is the kind of fencing token issued.
	Fence FenceKind
	// FenceScope says over what the fences are ordered ("key", "server",
	// "cluster", ...): two fences compare only within one scope.
	FenceScope string

	// ToleratedFailures is the number of servers that may be down while
	// acquire and release keep working (0 for a single server).
	ToleratedFailures int

	// FailoverSafe: mutual exclusion and fences survive failover to a
	// replica (false for asynchronous Redis replication).
	FailoverSafe bool

	// SurvivesRestart: a lease survives a restart of the server(s) that
	// hold it, and no second holder is granted meanwhile.
	SurvivesRestart bool

	// FIFO: blocked Acquire calls are served in arrival order.
	FIFO bool

	// PushWakeup: a blocked Acquire is woken by the release itself, not
	// only by polling.
	PushWakeup bool

	// LostNotification: Done fires when the lease is lost, before another
	// client can be granted the key, as long as the holder's process runs.
	LostNotification bool

	// ReleasedOnCrash: the key is freed as soon as the holder's process
	// dies (its connection closes), not only when the TTL runs out.
	ReleasedOnCrash bool

	// WaiterSessions: a blocked Acquire queues under a server-side
	// session (a connection, an etcd lease, a ZooKeeper session) that
	// expires when the waiter is cut off; the waiter then returns an error
	// promptly instead of waiting on, and its entry never blocks others
	// (scenario S26 of docs/conformance.md).
	WaiterSessions bool

	// CrossProcess: several processes can contend through this backend
	// (false for the in-process backend).
	CrossProcess bool
}
