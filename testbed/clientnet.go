// The client network: fixed addresses by which clients reach a node's
// server without a proxy (see PacketLink).

package testbed

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// clientNetAttempts bounds the tries to create the client network on a
// subnet that another process may take first.
const clientNetAttempts = 5

// clientNet is the process's client network: a Docker bridge network with
// a subnet of its own, on which each node that has packet links gets a
// fixed address. Docker keeps an endpoint's fixed address across the
// container's restarts, whereas an address on the default bridge is handed
// out afresh at each start and may meanwhile have gone to another container
// (of this test or of another process); a client that dials a fixed
// address reaches the same server for the whole test. The network is
// internal, so that it never becomes a container's default gateway:
// Docker publishes a container's ports through its gateway network, and a
// new gateway would move them to another host port (breaking HostAddr and
// every proxy link). The host still reaches the containers on it. The
// tests that use the network share it; when the last of them ends it is
// removed.
var clientNet struct {
	mu     sync.Mutex
	id     string
	subnet netip.Prefix
	last   netip.Addr                         // the last address handed out
	users  map[testing.TB]map[string]struct{} // containers attached, by test
	seq    int                                // networks created so far
}

// clientAddr returns n's fixed address on the client network, attaching
// n's container on first use. It works on a stopped container too.
func (n *Node) clientAddr(ctx context.Context) (netip.Addr, error) {
	clientNet.mu.Lock()
	defer clientNet.mu.Unlock()
	routes.Lock()
	addr := n.clientIP
	routes.Unlock()
	if addr.IsValid() {
		return addr, nil
	}
	if clientNet.id == "" {
		if err := createClientNet(ctx); err != nil {
			return netip.Addr{}, fmt.Errorf("testbed: client network: %w", err)
		}
	}
	addr = clientNet.last.Next()
	if !clientNet.subnet.Contains(addr) {
		return netip.Addr{}, fmt.Errorf("testbed: client network %s has no address left", clientNet.subnet)
	}
	if err := attachClientNetLocked(ctx, n, addr); err != nil {
		return netip.Addr{}, err
	}
	clientNet.last = addr
	routes.Lock()
	n.clientIP = addr
	routes.Unlock()
	return addr, nil
}

// attachClientNet connects n's container to the client network at addr.
func attachClientNet(ctx context.Context, n *Node, addr netip.Addr) error {
	clientNet.mu.Lock()
	defer clientNet.mu.Unlock()
	return attachClientNetLocked(ctx, n, addr)
}

func attachClientNetLocked(ctx context.Context, n *Node, addr netip.Addr) error {
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	if err := cli.networkConnect(ctx, clientNet.id, n.id, nil, addr); err != nil {
		return fmt.Errorf("testbed: %s: attach to the client network at %s: %w", n.name, addr, err)
	}
	if err := n.refreshIfUp(ctx); err != nil {
		return err
	}
	if clientNet.users[n.t] == nil {
		clientNet.users[n.t] = map[string]struct{}{}
		t := n.t
		t.Cleanup(func() { releaseClientNet(t) })
	}
	clientNet.users[n.t][n.ContainerID()] = struct{}{}
	return nil
}

// detachClientNet disconnects n's container from the client network.
func detachClientNet(ctx context.Context, n *Node) error {
	clientNet.mu.Lock()
	defer clientNet.mu.Unlock()
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	if err := cli.networkDisconnect(ctx, clientNet.id, n.id); err != nil {
		return fmt.Errorf("testbed: %s: detach from the client network: %w", n.name, err)
	}
	delete(clientNet.users[n.t], n.ContainerID())
	return n.refreshIfUp(ctx)
}

// refreshIfUp re-reads the published port of a running node after its
// networks changed, and re-points HostAddr and the proxies only if it
// moved (re-pointing resets the proxies' connections). Docker publishes a
// container's ports through its gateway network, which the internal
// client network never becomes, so the port is not expected to move; the
// re-read keeps the node usable on a Docker that moves it anyway.
func (n *Node) refreshIfUp(ctx context.Context) error {
	old := n.HostAddr()
	if old == "" { // killed or stopped: Start refreshes
		return nil
	}
	addr, err := mappedAddr(ctx, n.id, n.port)
	if err != nil {
		return fmt.Errorf("testbed: %s: %w", n.name, err)
	}
	if addr != old {
		n.setHostAddr(addr)
	}
	return nil
}

// createClientNet creates the client network (clientNet.mu held). Docker
// picks a subnet that clashes with no network or route of the host; the
// network is then made again with that subnet configured, which fixed
// addresses need. Another process may take the subnet in between: then it
// tries again.
func createClientNet(ctx context.Context) error {
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	var errs []error
	for range clientNetAttempts {
		clientNet.seq++
		name := "distlock-clients-" + runID + "-" + strconv.Itoa(clientNet.seq)
		probe, err := cli.networkCreate(ctx, name, false, netip.Prefix{})
		if err != nil {
			return err
		}
		subnet, err := cli.networkSubnet(ctx, probe)
		rerr := cli.networkRemove(ctx, probe)
		if err = errors.Join(err, rerr); err != nil {
			return err
		}
		if !subnet.IsValid() {
			return fmt.Errorf("docker gave network %s no subnet", name)
		}
		created, err := cli.networkCreate(ctx, name, true, subnet)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		clientNet.id, clientNet.subnet = created, subnet
		clientNet.last = subnet.Addr().Next() // the gateway
		clientNet.users = map[testing.TB]map[string]struct{}{}
		return nil
	}
	return fmt.Errorf("no free subnet after %d attempts: %w", clientNetAttempts, errors.Join(errs...))
}

// releaseClientNet detaches the containers test t attached, in t's
// cleanup (before the containers are removed), and removes the network
// once no test uses it.
func releaseClientNet(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	clientNet.mu.Lock()
	defer clientNet.mu.Unlock()
	cli, err := dockerClient()
	if err != nil {
		t.Errorf("testbed: client network: %v", err)
		return
	}
	for id := range clientNet.users[t] {
		err := cli.networkDisconnect(ctx, clientNet.id, id)
		if err != nil && !isNotFound(err) {
			t.Errorf("testbed: detach %s from the client network: %v", id, err)
		}
	}
	delete(clientNet.users, t)
	if len(clientNet.users) > 0 {
		return
	}
	if err := cli.networkRemove(ctx, clientNet.id); err != nil && !isNotFound(err) {
		t.Errorf("testbed: remove the client network: %v", err)
	}
	clientNet.id = ""
}

// packetCarrier is the node whose container carries n's client address.
func (n *Node) packetCarrier() *Node {
	routes.Lock()
	defer routes.Unlock()
	if n.carrier != nil {
		return n.carrier
	}
	return n
}

// RoutePacketLinksTo moves n's client address, with n's packet links and
// their faults, to other's container, as a virtual IP moves to the new
// primary on failover: clients dial the same addresses and reach other's
// server. A connection opened before the move reaches a kernel that does
// not know it and is reset. other must have no client address of its
// own; n.RoutePacketLinksTo(ctx, n) moves the address back. Either node
// may be down (Start sets its links up). The fixed address keeps its MAC
// address only where Docker derives the MAC from the IP address; elsewhere
// the host finds the new one when its neighbour entry goes stale.
func (n *Node) RoutePacketLinksTo(ctx context.Context, other *Node) error {
	routes.Lock()
	addr, from := n.clientIP, n.carrier
	if from == nil {
		from = n
	}
	busy := other != n && (other.clientIP.IsValid() || len(other.guests) > 0)
	routes.Unlock()
	switch {
	case !addr.IsValid():
		return fmt.Errorf("testbed: %s has no client address to move: make a PacketLink first", n.name)
	case from == other:
		return nil
	case busy:
		return fmt.Errorf("testbed: %s already has a client address: cannot take %s's", other.name, n.name)
	}
	if err := detachClientNet(ctx, from); err != nil {
		return err
	}
	if err := attachClientNet(ctx, other, addr); err != nil {
		return err
	}
	routes.Lock()
	from.guests = slices.DeleteFunc(from.guests, func(g *Node) bool { return g == n })
	n.carrier = nil
	if other != n {
		n.carrier = other
		other.guests = append(other.guests, n)
	}
	var scripts []string
	for _, l := range n.packetLinks {
		scripts = append(scripts, l.setupScript(), l.faultScript(l.fault))
	}
	routes.Unlock()
	if other.HostAddr() == "" || len(scripts) == 0 {
		return nil
	}
	return other.sh(ctx, strings.Join(scripts, " && "))
}
