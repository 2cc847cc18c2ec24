// Package conformance is one suite of safety and liveness scenarios that
// runs unchanged against every backend through the public distlock API.
// It injects faults through the hooks a Harness provides, reads the
// backend's Guarantees to choose each scenario's expected outcome, checks
// two oracles (a resource-effect register and a porcupine history check),
// and writes a guarantee report (JSON and a Markdown matrix).
//
// A backend test calls Run(t, harness); its test binary's TestMain calls
// Main(m) so that scenarios can re-execute it as a separate client process
// (paused with SIGSTOP, killed with SIGKILL).
package conformance

import (
	"context"
	"time"

	"github.com/distlock/distlock"
)

// Server is one server of the backend under test, with fault hooks.
type Server interface {
	Name() string
	// Kill stops the server abruptly (SIGKILL); Start brings it back, with
	// whatever state its persistence settings keep.
	Kill(ctx context.Context) error
	Start(ctx context.Context) error
	// Pause freezes the server (connections stay up); Unpause resumes it.
	Pause(ctx context.Context) error
	Unpause(ctx context.Context) error
}

// Link is one client's network path to the servers. Faults drop packets
// in the servers' network namespaces (no proxy in the path): a black-holed
// client and its servers see a dead peer exactly as after a real network
// failure, with no ACK, reset or FIN, so each side's own keepalive and
// retransmission timers decide. A latency client (LatencyClient) has a
// user-space proxy per server in front of that path, which can delay its
// traffic and also drops it at once when the link is cut. Each method
// returns an error if the fault cannot be set.
type Link interface {
	// Blackhole silently drops traffic both ways; DropReplies only the
	// servers' replies (requests still arrive: a lost reply); Heal
	// restores both, and removes latency.
	Blackhole(ctx context.Context) error
	DropReplies(ctx context.Context) error
	Heal(ctx context.Context) error
	// SetLatency delays traffic both ways; only a latency client's links
	// can (it fails on the others).
	SetLatency(ctx context.Context, d time.Duration) error
}

// Harness adapts a backend to the suite. Only Name and NewLocker are
// required; scenarios whose hooks are nil are reported "n/a".
type Harness struct {
	// Name is the report column, e.g. "mem" or "R1".
	Name string

	// NewLocker opens a client. client names the client's network view,
	// so Links(client) can cut or slow that client alone; a name made by
	// LatencyClient must reach the servers through latency proxies.
	NewLocker func(ctx context.Context, client string) (distlock.Locker, error)

	// URL returns a URL by which a worker process acting as client opens
	// the backend; nil if clients cannot be separate processes.
	URL func(client string) string

	// Spec is the topology of the specification table
	// (docs/conformance.md) this harness is judged against ("R5", "R1",
	// "PG", "E3", "Z3"; "" for none): where that topology's cell says OK, the backend's Guarantees may not expect a break
	// unless the deviation is documented (see specDeviations).
	Spec string

	// TTL is the short lease TTL the scenarios use. Default 1 s.
	TTL time.Duration

	// Servers are the backend's servers; Minority lists indexes of a set
	// of servers whose loss the backend tolerates (for R1: the replica),
	// Majority a set whose loss makes it unavailable (for R1: the primary).
	Servers  []Server
	Minority []int
	Majority []int

	// Links returns the network path of one client.
	Links func(client string) Link

	// ServerLinks returns one client's path to each server, in Servers
	// order, so a scenario can give a client a partial view (Redlock:
	// client A reaches nodes 1-3, client B reaches 3-5). Optional.
	ServerLinks func(client string) []Link

	// Guarantees, if set, adjusts what the backend reports to what the
	// harness's deployment provides (for example servers that fsync every
	// write survive restarts). The report says the harness adjusted it.
	Guarantees func(distlock.Guarantees) distlock.Guarantees

	// Revoke deletes the lock of key behind the holder's back, as an
	// operator would.
	Revoke func(ctx context.Context, key string) error

	// PrepareFailover stops replication; Failover then kills the primary,
	// promotes the replica (which has not received the lock) and points
	// clients at it; RestoreFailover brings back a serving primary for the
	// scenarios that follow (S18).
	PrepareFailover func(ctx context.Context) error
	Failover        func(ctx context.Context) error
	RestoreFailover func(ctx context.Context) error

	// Holders returns how many servers hold a lock entry for key (S24
	// checks that no partial keys are left behind).
	Holders func(ctx context.Context, key string) (int, error)

	// Commands returns the number of commands the servers have processed,
	// for the herd scenario.
	Commands func(ctx context.Context) (int64, error)

	// GuardedWrite stores value for ls's key inside the coordinator,
	// applied only while ls still owns the lock (an etcd transaction on
	// the lock key, a fenced SQL UPDATE, a ZooKeeper multi with a version
	// check); it returns an error when not applied. GuardedRead returns
	// the value last applied for key ("" if none). Both are needed for
	// S32. The coordinator must make the check: a guard that only looks
	// at ls.Err() locally would pass S32 without proving anything.
	GuardedWrite func(ctx context.Context, ls distlock.Lease, value string) error
	GuardedRead  func(ctx context.Context, key string) (string, error)

	// Leader returns the index in Servers of the current leader (S19).
	Leader func(ctx context.Context) (int, error)

	// Isolate cuts server i off from the other servers (not from its
	// clients' links); Rejoin heals it (S19).
	Isolate func(ctx context.Context, i int) error
	Rejoin  func(ctx context.Context, i int) error

	// ClockJump moves server i's wall clock by d (libfaketime); d = 0
	// restores it (S20, S21).
	ClockJump func(ctx context.Context, i int, d time.Duration) error

	// PoolerURL returns a URL by which client opens the backend through
	// a transaction-pooling proxy (PgBouncer) in front of the servers
	// (S28). UnpinnedLocker opens a deliberately misconfigured locker
	// whose lock and unlock may run on different pooled connections, to
	// demonstrate the break (S29).
	PoolerURL      func(client string) string
	UnpinnedLocker func(ctx context.Context, client string) (distlock.Locker, error)
}

func (h *Harness) ttl() time.Duration {
	if h.TTL > 0 {
		return h.TTL
	}
	return time.Second
}
