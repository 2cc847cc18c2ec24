// Packet-level faults: dropped packets in the server's own network
// namespace, set with iptables inside its container (the testbed starts
// every container with NET_ADMIN). Unlike a Proxy, which stays a live TCP
// peer and lets each side's kernel answer the other's keepalive probes, a
// cut here leaves both TCP stacks talking to nothing: no ACK, no RST, no
// FIN. A server sees its client as dead exactly as it would after a real
// network failure, and the client sees a silent server.

package testbed

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// firstPacketPort is the container port of the first PacketLink; each
// further client name takes the next one.
const firstPacketPort = 20001

// PacketLink is one client's direct path to a node's server: the client
// connects to the node's fixed address on the client network (no
// user-space proxy, no docker-proxy) on a port reserved for that client,
// which the container redirects to the server's port. Faults on the link
// drop that client's packets, and only that client's, in the server's
// network namespace. A restarted container gets a new network namespace:
// Node.Start sets the link up again and keeps its current fault.
type PacketLink struct {
	n      *Node
	client string
	port   int
	ready  chan struct{} // closed once the link is set up
	err    error         // the set-up's failure, read after ready
	fault  string        // iptables rules of the current fault ("" = healed)
}

// PacketLink returns the packet-level link of one client to this node,
// setting it up on first use (the node may be down: Start completes it).
// It fails the test if the container cannot be configured.
func (n *Node) PacketLink(client string) *PacketLink {
	n.t.Helper()
	routes.Lock()
	l, ok := n.packetLinks[client]
	if !ok {
		l = &PacketLink{n: n, client: client, port: firstPacketPort + len(n.packetLinks), ready: make(chan struct{})}
		n.packetLinks[client] = l
	}
	routes.Unlock()
	if !ok {
		l.err = l.setUp(context.Background())
		close(l.ready)
	}
	<-l.ready
	if l.err != nil {
		n.t.Fatalf("testbed: %s: packet link %q: %v", n.name, client, l.err)
	}
	return l
}

// setUp gives the node its client address and installs the link's port
// redirection in the container that carries that address, if it runs.
func (l *PacketLink) setUp(ctx context.Context) error {
	if _, err := l.n.clientAddr(ctx); err != nil {
		return err
	}
	carrier := l.n.packetCarrier()
	if carrier.HostAddr() == "" {
		return nil // down: Start sets it up
	}
	return carrier.sh(ctx, l.setupScript()+" && "+l.faultScript(l.currentFault()))
}

// Addr is the host:port the client dials: the node's fixed address on the
// client network and the link's port. It stays the same when the node is
// started again, and follows RoutePacketLinksTo.
func (l *PacketLink) Addr() string {
	routes.Lock()
	defer routes.Unlock()
	return netip.AddrPortFrom(l.n.clientIP, uint16(l.port)).String()
}

// Cut drops every packet of the client's connections in both directions,
// and the SYNs of new ones: a black hole.
func (l *PacketLink) Cut(ctx context.Context) error {
	return l.set(ctx, "-A %[1]s -j DROP\n-A %[2]s -j DROP")
}

// DropReplies drops only the server's packets to the client: requests
// still arrive and take effect, their replies (and ACKs) are lost.
func (l *PacketLink) DropReplies(ctx context.Context) error {
	return l.set(ctx, "-A %[2]s -j DROP")
}

// DropRequests drops only the client's packets to the server.
func (l *PacketLink) DropRequests(ctx context.Context) error {
	return l.set(ctx, "-A %[1]s -j DROP")
}

// Loss drops each packet of the client's connections, both ways, with
// probability p (0 < p < 1): TCP retransmits, so traffic is slowed and
// bursty rather than stopped.
func (l *PacketLink) Loss(ctx context.Context, p float64) error {
	if p <= 0 || p >= 1 {
		return fmt.Errorf("testbed: loss probability %v: want 0 < p < 1", p)
	}
	rule := fmt.Sprintf("-m statistic --mode random --probability %.4f -j DROP", p)
	return l.set(ctx, "-A %[1]s "+rule+"\n-A %[2]s "+rule)
}

// Heal removes the link's fault.
func (l *PacketLink) Heal(ctx context.Context) error { return l.set(ctx, "") }

// set replaces the link's fault with rules, a format whose %[1]s is the
// link's inbound chain and %[2]s its outbound one. On a node that is down
// the fault is only recorded: Start applies it.
func (l *PacketLink) set(ctx context.Context, rules string) error {
	<-l.ready
	routes.Lock()
	l.fault = rules
	routes.Unlock()
	carrier := l.n.packetCarrier()
	if carrier.HostAddr() == "" {
		return nil
	}
	return carrier.sh(ctx, l.faultScript(rules))
}

func (l *PacketLink) currentFault() string {
	routes.Lock()
	defer routes.Unlock()
	return l.fault
}

// chains names the link's inbound and outbound filter chains.
func (l *PacketLink) chains() (in, out string) {
	return "dl-in-" + strconv.Itoa(l.port), "dl-out-" + strconv.Itoa(l.port)
}

// setupScript redirects the link's port to the server's and hooks the
// link's chains into INPUT and OUTPUT by the connections' original
// destination port, which conntrack keeps for both directions. It adds
// only what is missing, so it may run again in the same namespace.
func (l *PacketLink) setupScript() string {
	in, out := l.chains()
	server := strings.TrimSuffix(l.n.port, "/tcp")
	p := strconv.Itoa(l.port)
	ensure := func(table, chain, rule string) string {
		return "{ iptables -t " + table + " -C " + chain + " " + rule + " 2>/dev/null || iptables -t " + table + " -I " + chain + " " + rule + "; }"
	}
	return strings.Join([]string{
		ensure("nat", "PREROUTING", "-p tcp --dport "+p+" -j REDIRECT --to-ports "+server),
		"{ iptables -N " + in + " 2>/dev/null || true; }", "{ iptables -N " + out + " 2>/dev/null || true; }",
		ensure("filter", "INPUT", "-p tcp -m conntrack --ctorigdstport "+p+" -j "+in),
		ensure("filter", "OUTPUT", "-p tcp -m conntrack --ctorigdstport "+p+" -j "+out),
	}, " && ")
}

// faultScript flushes the link's chains and adds rules to them.
func (l *PacketLink) faultScript(rules string) string {
	in, out := l.chains()
	script := "iptables -F " + in + " && iptables -F " + out
	if rules == "" {
		return script
	}
	for _, r := range strings.Split(fmt.Sprintf(rules, in, out), "\n") {
		script += " && iptables " + r
	}
	return script
}

// restorePacketFaults sets up the packet links whose address n's container
// carries again in a new network namespace (after Start), with their
// faults, and n's peer cuts.
func (n *Node) restorePacketFaults(ctx context.Context) error {
	routes.Lock()
	var scripts []string
	for _, owner := range append([]*Node{n}, n.guests...) {
		if owner.carrier != nil && owner.carrier != n {
			continue // n's own address was moved to another container
		}
		for _, l := range owner.packetLinks {
			scripts = append(scripts, l.setupScript(), l.faultScript(l.fault))
		}
	}
	for _, ip := range n.cutPeers {
		scripts = append(scripts, peerScript("-A", ip))
	}
	routes.Unlock()
	if len(scripts) == 0 {
		return nil
	}
	return n.sh(ctx, strings.Join(scripts, " && "))
}

// IP is the container's address on Docker's default bridge (or, for a
// container not on it, on its first network), reachable from the host.
func (n *Node) IP() string {
	ips, err := n.ips(context.Background())
	if err != nil || len(ips) == 0 {
		n.t.Fatalf("testbed: %s: no container IP: %v", n.name, err)
	}
	return ips[0]
}

// ips lists the container's addresses, the default bridge's first.
func (n *Node) ips(ctx context.Context) ([]string, error) {
	cli, err := dockerClient()
	if err != nil {
		return nil, err
	}
	info, err := cli.containerInspect(ctx, n.id)
	if err != nil {
		return nil, err
	}
	var ips []string
	for name, ep := range info.NetworkSettings.Networks {
		if ep == nil || ep.IPAddress == "" {
			continue
		}
		if name == "bridge" {
			ips = append([]string{ep.IPAddress}, ips...)
		} else {
			ips = append(ips, ep.IPAddress)
		}
	}
	return ips, nil
}

// sh runs a shell script in the node's container and fails with its output
// if it exits non-zero.
func (n *Node) sh(ctx context.Context, script string) error {
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	code, out, err := cli.containerExec(ctx, n.id, []string{"sh", "-c", script})
	if err == nil && code != 0 {
		err = fmt.Errorf("exit code %d: %s", code, strings.TrimSpace(string(out)))
	}
	if err != nil {
		return fmt.Errorf("testbed: %s: %w", n.name, err)
	}
	return nil
}

// CutPeer drops every packet between n and other (both containers, both
// directions) on all their networks, while their clients' paths stay up:
// a partition between two servers, as a failed switch port makes it. It
// survives either node's Start.
func (n *Node) CutPeer(ctx context.Context, other *Node) error {
	return n.peer(ctx, other, "-A")
}

// HealPeer undoes CutPeer.
func (n *Node) HealPeer(ctx context.Context, other *Node) error {
	return n.peer(ctx, other, "-D")
}

// peer adds (-A) or deletes (-D) the rules that drop the traffic between
// n and other, on both sides.
func (n *Node) peer(ctx context.Context, other *Node, op string) error {
	for _, pair := range [][2]*Node{{n, other}, {other, n}} {
		self, peer := pair[0], pair[1]
		ips, err := peer.ips(ctx)
		if err != nil {
			return fmt.Errorf("testbed: %s: %w", peer.name, err)
		}
		var scripts []string
		routes.Lock()
		for _, ip := range ips {
			scripts = append(scripts, peerScript(op, ip))
			if op == "-A" {
				self.cutPeers = append(self.cutPeers, ip)
			} else {
				self.cutPeers = slices.DeleteFunc(self.cutPeers, func(s string) bool { return s == ip })
			}
		}
		routes.Unlock()
		if err := self.sh(ctx, strings.Join(scripts, " && ")); err != nil {
			return err
		}
	}
	return nil
}

// peerScript adds or deletes the two rules that drop traffic to and from ip.
func peerScript(op, ip string) string {
	return "iptables " + op + " INPUT -s " + ip + " -j DROP && iptables " + op + " OUTPUT -d " + ip + " -j DROP"
}
