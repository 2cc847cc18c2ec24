package conformance

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// latencyPrefix starts the name of every latency client.
const latencyPrefix = "latency-"

// LatencyClient names a client whose connections run through a user-space
// proxy per server, in front of its packet-level path, that can delay them
// (Link.SetLatency). The scenarios that give one client a slow path (S10,
// S22, S24, S35) use such names: a per-client view is what they need. A
// proxy stays a live TCP peer to the client (it acknowledges data and
// answers keepalive probes), so a scenario that needs the client to see a
// dead server must use another name; a cut drops a latency client's
// traffic in its proxies at once and in the servers' namespaces, so the
// servers do see a dead peer. Packet-level delay (tc netem) is not used:
// not every kernel the suite runs on has it.
func LatencyClient(name string) string { return latencyPrefix + name }

// IsLatencyClient reports whether client was named by LatencyClient.
func IsLatencyClient(client string) bool { return strings.HasPrefix(client, latencyPrefix) }

// linkHealTimeout bounds healing a link when a scenario ends.
const linkHealTimeout = 30 * time.Second

// blackhole, dropReplies and latency set a fault on a client's link, or
// fail the scenario; the link is healed when the scenario ends, however
// it ends, so the next scenario starts on a healthy network.
func (e *env) blackhole(l Link)   { e.linkFault("black-hole", l, l.Blackhole) }
func (e *env) dropReplies(l Link) { e.linkFault("drop the replies of", l, l.DropReplies) }
func (e *env) latency(l Link, d time.Duration) {
	e.linkFault(fmt.Sprintf("delay by %v", d), l, func(ctx context.Context) error { return l.SetLatency(ctx, d) })
}

func (e *env) linkFault(what string, l Link, set func(context.Context) error) {
	e.t.Helper()
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), linkHealTimeout)
		defer cancel()
		if err := l.Heal(ctx); err != nil {
			e.t.Errorf("healing a link after the scenario: %v", err)
		}
	})
	if err := set(e.ctx); err != nil {
		e.t.Fatalf("%s a link: %v", what, err)
	}
}

// heal removes the faults of a link, or fails the scenario.
func (e *env) heal(l Link) {
	e.t.Helper()
	if err := l.Heal(e.ctx); err != nil {
		e.t.Fatalf("heal a link: %v", err)
	}
}
