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
	"io"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/moby/client"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
)

// firstPacketPort is the container port of the first PacketLink; each
// further client name takes the next one.
const firstPacketPort = 20001

// PacketLink is one client's direct path to a node's server: the client
// connects to the container's own IP address (no user-space proxy, no
// docker-proxy) on a port reserved for that client, which the container
// redirects to the server's port. Faults on the link drop that client's
// packets, and only that client's, in the server's network namespace.
// A restarted container gets a new network namespace: Node.Start sets the
// link up again and keeps its current fault.
type PacketLink struct {
	n      *Node
	client string
	port   int
	fault  string // iptables rules of the current fault ("" = healed)
}

// PacketLink returns the packet-level link of one client to this node,
// setting it up on first use. It fails the test if the container cannot be
// configured.
func (n *Node) PacketLink(client string) *PacketLink {
	n.t.Helper()
	routes.Lock()
	l, ok := n.packetLinks[client]
	if !ok {
		l = &PacketLink{n: n, client: client, port: firstPacketPort + len(n.packetLinks)}
		n.packetLinks[client] = l
	}
	routes.Unlock()
	if !ok {
		if err := n.sh(context.Background(), l.setupScript()); err != nil {
			n.t.Fatalf("testbed: %s: packet link %q: %v", n.name, client, err)
		}
	}
	return l
}

// Addr is the host:port the client dials: the container's IP address and
// the link's port. The address may change when the node is started again.
func (l *PacketLink) Addr() string {
	return net.JoinHostPort(l.n.IP(), strconv.Itoa(l.port))
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
// link's inbound chain and %[2]s its outbound one.
func (l *PacketLink) set(ctx context.Context, rules string) error {
	routes.Lock()
	l.fault = rules
	routes.Unlock()
	return l.n.sh(ctx, l.faultScript(rules))
}

// chains names the link's inbound and outbound filter chains.
func (l *PacketLink) chains() (in, out string) {
	return "dl-in-" + strconv.Itoa(l.port), "dl-out-" + strconv.Itoa(l.port)
}

// setupScript redirects the link's port to the server's and hooks the
// link's chains into INPUT and OUTPUT by the connections' original
// destination port, which conntrack keeps for both directions.
func (l *PacketLink) setupScript() string {
	in, out := l.chains()
	server := strings.TrimSuffix(l.n.port, "/tcp")
	p := strconv.Itoa(l.port)
	return strings.Join([]string{
		"iptables -t nat -A PREROUTING -p tcp --dport " + p + " -j REDIRECT --to-ports " + server,
		"iptables -N " + in, "iptables -N " + out,
		"iptables -I INPUT -p tcp -m conntrack --ctorigdstport " + p + " -j " + in,
		"iptables -I OUTPUT -p tcp -m conntrack --ctorigdstport " + p + " -j " + out,
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

// restorePacketFaults sets up the node's packet links again in a new
// network namespace (after Start), with their faults and its peer cuts.
func (n *Node) restorePacketFaults(ctx context.Context) error {
	routes.Lock()
	var scripts []string
	for _, l := range n.packetLinks {
		scripts = append(scripts, l.setupScript(), l.faultScript(l.fault))
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
	info, err := cli.ContainerInspect(ctx, n.ContainerID(), client.ContainerInspectOptions{})
	if err != nil {
		return nil, err
	}
	var ips []string
	for name, ep := range info.Container.NetworkSettings.Networks {
		if ep == nil || !ep.IPAddress.IsValid() {
			continue
		}
		if name == "bridge" {
			ips = append([]string{ep.IPAddress.String()}, ips...)
		} else {
			ips = append(ips, ep.IPAddress.String())
		}
	}
	return ips, nil
}

// sh runs a shell script in the node's container and fails with its output
// if it exits non-zero.
func (n *Node) sh(ctx context.Context, script string) error {
	code, out, err := n.ctr.Exec(ctx, []string{"sh", "-c", script}, tcexec.Multiplexed())
	if err == nil && code != 0 {
		b, _ := io.ReadAll(out)
		err = fmt.Errorf("exit code %d: %s", code, strings.TrimSpace(string(b)))
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
