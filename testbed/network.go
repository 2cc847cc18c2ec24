// Network partitions between servers: a node is cut off from its peers by
// disconnecting its container from their shared Docker network, while its
// clients keep reaching it through its links (published ports on another
// network).

package testbed

import (
	"context"
	"fmt"
	"net/netip"
)

// DisconnectNetwork removes the node's container from the Docker network
// named nw: the node can no longer reach, or be reached by, the containers
// on it. Its links keep working if the container is attached to another
// network that carries its published port (see nodeSpec.bridge), but Docker
// publishes the port again on a new host port: the links are re-pointed,
// which resets the connections through them (clients reconnect to the same
// node).
func (n *Node) DisconnectNetwork(ctx context.Context, nw string) error {
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	if err := cli.networkDisconnect(ctx, nw, n.id); err != nil {
		return fmt.Errorf("testbed: disconnect %s from network %s: %w", n.name, nw, err)
	}
	return n.refresh(ctx)
}

// ConnectNetwork attaches the node's container to the Docker network named
// nw, under the given DNS aliases (Docker forgets a container's aliases on
// a network when it is disconnected from it, so Rejoin-style callers pass
// them again). Links are re-pointed as after DisconnectNetwork.
func (n *Node) ConnectNetwork(ctx context.Context, nw string, aliases ...string) error {
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	if err := cli.networkConnect(ctx, nw, n.id, aliases, netip.Addr{}); err != nil {
		return fmt.Errorf("testbed: connect %s to network %s: %w", n.name, nw, err)
	}
	return n.refresh(ctx)
}
