package testbed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// ErrNodeDown is returned when a node's server is addressed directly while
// its container is killed or stopped.
var ErrNodeDown = errors.New("testbed: node is down")

// stopTimeout is how long Stop waits for a graceful exit before the
// container is killed.
const stopTimeout = 10 * time.Second

// routes guards the routing state of all nodes (hostAddr, links, target,
// followers, closed): failover moves links between nodes.
var routes sync.Mutex

// Node is one server in a container. Clients reach it through links: one
// Proxy per client name, so network faults can be injected per
// client-node link. The links' addresses stay the same when the server
// restarts on another host port. Node carries the process-level faults
// (Kill, Stop, Start, Restart, Pause, Unpause) shared by every server kind.
type Node struct {
	t           testing.TB
	name        string
	id          string // Docker container ID
	port        string // container port, e.g. "6379/tcp"
	probe       func(ctx context.Context, addr string) error
	beforeStart func() // resets per-process state before Start

	// Guarded by routes.
	hostAddr  string            // mapped host:port; "" while down
	links     map[string]*Proxy // by client name; "" is the default link
	target    *Node             // whose server the links reach; n unless rerouted
	followers map[*Node]bool    // nodes whose target is n
	closed    bool

	// Packet-level faults (see PacketLink, CutPeer), guarded by routes:
	// they are set up again in the new network namespace of each Start.
	packetLinks map[string]*PacketLink // by client name
	cutPeers    []string               // peer IPs whose packets are dropped
	clientIP    netip.Addr             // fixed address on the client network; zero until the first PacketLink
	carrier     *Node                  // whose container carries clientIP (see RoutePacketLinksTo); nil: n's own
	guests      []*Node                // nodes whose client address n's container carries
}

// Name is the node's name within its test, e.g. "redis-0".
func (n *Node) Name() string { return n.name }

// ContainerID is the Docker ID of the node's container.
func (n *Node) ContainerID() string { return n.id }

// Addr is the host:port of the node's default client link (Link("")): a
// Proxy whose address is stable across restarts.
func (n *Node) Addr() string { return n.Link("").Addr() }

// HostAddr is the container's mapped host:port, reached without any proxy,
// or "" while the node is killed or stopped. It may change on Start.
func (n *Node) HostAddr() string {
	routes.Lock()
	defer routes.Unlock()
	return n.hostAddr
}

// Link returns the Proxy that carries one client's traffic to this node,
// creating it on first use, so that faults can be injected on that link
// alone. Link("") is the default link behind Addr. Links are closed when
// the test ends. Link fails the test if no proxy can be started.
func (n *Node) Link(client string) *Proxy {
	n.t.Helper()
	p, err := n.link(client)
	if err != nil {
		n.t.Fatalf("testbed: %s: link %q: %v", n.name, client, err)
	}
	return p
}

func (n *Node) link(client string) (*Proxy, error) {
	routes.Lock()
	defer routes.Unlock()
	if p, ok := n.links[client]; ok {
		return p, nil
	}
	p, err := NewProxy(n.target.hostAddr)
	if err != nil {
		return nil, err
	}
	if n.closed {
		_ = p.Close() // the test is over: hand out a dead link
	}
	n.links[client] = p
	return p, nil
}

// RouteLinksTo points every current and future link of n at other's
// server, and keeps them following it across other's restarts, as a
// Sentinel or virtual-IP failover would. Existing connections are reset.
// n's own container is not touched.
func (n *Node) RouteLinksTo(other *Node) {
	routes.Lock()
	defer routes.Unlock()
	delete(n.target.followers, n)
	n.target = other
	other.followers[n] = true
	for _, p := range n.links {
		p.SetTarget(other.hostAddr)
	}
}

// Kill sends SIGKILL to the server (the container's main process): the
// container exits at once without a shutdown, and in-memory data is lost.
// Connections through the links are reset and new ones are refused until
// Start. It works on a paused node too.
func (n *Node) Kill(ctx context.Context) error {
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	if err := cli.containerKill(ctx, n.id, "KILL"); err != nil {
		return fmt.Errorf("testbed: kill %s: %w", n.name, err)
	}
	n.setHostAddr("")
	return nil
}

// Stop stops the server gracefully (SIGTERM, then SIGKILL after 10s). Links
// behave as after Kill.
func (n *Node) Stop(ctx context.Context) error {
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	if err := cli.containerStop(ctx, n.id, int(stopTimeout/time.Second)); err != nil {
		return fmt.Errorf("testbed: stop %s: %w", n.name, err)
	}
	n.setHostAddr("")
	return nil
}

// Start starts the same container again after Kill or Stop and waits until
// the server answers. Whatever the server did not persist is gone. Docker
// may publish the port on a different host port: links are re-pointed, so
// Addr and the link addresses stay valid.
func (n *Node) Start(ctx context.Context) error {
	if n.beforeStart != nil {
		n.beforeStart()
	}
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	if err := cli.containerStart(ctx, n.id); err != nil {
		return fmt.Errorf("testbed: start %s: %w", n.name, err)
	}
	if err := waitReady(ctx, n.id, n.port, n.probe); err != nil {
		return fmt.Errorf("testbed: start %s: %w", n.name, err)
	}
	if err := n.restorePacketFaults(ctx); err != nil {
		return err
	}
	return n.refresh(ctx)
}

// Restart is Kill followed by Start.
func (n *Node) Restart(ctx context.Context) error {
	if err := n.Kill(ctx); err != nil {
		return err
	}
	return n.Start(ctx)
}

// Pause freezes every process of the container (docker pause). TCP
// connections stay open and the kernel still accepts new ones, but nothing
// is answered: requests hang until Unpause.
func (n *Node) Pause(ctx context.Context) error {
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	if err := cli.containerPause(ctx, n.id); err != nil {
		return fmt.Errorf("testbed: pause %s: %w", n.name, err)
	}
	return nil
}

// Unpause resumes a paused node.
func (n *Node) Unpause(ctx context.Context) error {
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	if err := cli.containerUnpause(ctx, n.id); err != nil {
		return fmt.Errorf("testbed: unpause %s: %w", n.name, err)
	}
	return nil
}

// refresh reads the container's current host port and re-points the links
// that follow this node.
func (n *Node) refresh(ctx context.Context) error {
	addr, err := mappedAddr(ctx, n.id, n.port)
	if err != nil {
		return fmt.Errorf("testbed: %s: %w", n.name, err)
	}
	n.setHostAddr(addr)
	return nil
}

// setHostAddr records where the server listens ("" when down) and
// re-points the links of every node that follows this one. Re-pointing
// resets their connections.
func (n *Node) setHostAddr(addr string) {
	routes.Lock()
	defer routes.Unlock()
	n.hostAddr = addr
	for f := range n.followers {
		for _, p := range f.links {
			p.SetTarget(addr)
		}
	}
}

// close closes the node's links; it runs in the test's cleanup before the
// container is removed.
func (n *Node) close() {
	routes.Lock()
	n.closed = true
	links := make([]*Proxy, 0, len(n.links))
	for _, p := range n.links {
		links = append(links, p)
	}
	routes.Unlock()
	for _, p := range links {
		_ = p.Close()
	}
}

// dialDirect dials the node's server without a proxy, at its current host
// port.
func (n *Node) dialDirect(ctx context.Context) (net.Conn, error) {
	addr := n.HostAddr()
	if addr == "" {
		return nil, fmt.Errorf("%w: %s", ErrNodeDown, n.name)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}
