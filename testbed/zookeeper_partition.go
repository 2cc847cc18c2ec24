// Partitions inside a ZooKeeper ensemble: a server cut off from its peers
// while its clients keep their connections to it.

package testbed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// newPeerNetwork creates an ensemble's private network, removed when the
// test ends, under a name that sorts after "bridge". Of a container's
// networks, Docker publishes its ports through the first by name (all
// else equal): so the client port rides the default bridge, and leaving
// the peer network (Isolate) neither moves it nor breaks the connections
// through it.
func newPeerNetwork(t testing.TB) *testcontainers.DockerNetwork {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	//nolint:staticcheck // network.New names a network by a bare UUID, which may sort before "bridge"
	nw, err := testcontainers.GenericNetwork(ctx, testcontainers.GenericNetworkRequest{
		NetworkRequest: testcontainers.NetworkRequest{Name: "zk-peers-" + hex.EncodeToString(b), Driver: "bridge", Labels: labels()},
	})
	dnw, _ := nw.(*testcontainers.DockerNetwork)
	t.Cleanup(func() { // registered first, so it runs after the containers are removed
		if dnw == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dnw.Remove(ctx); err != nil && !errdefs.IsNotFound(err) {
			t.Errorf("testbed: remove network %s: %v", dnw.Name, err)
		}
	})
	if err != nil || dnw == nil {
		t.Fatalf("testbed: create network: %v", err)
	}
	return dnw
}

// Isolate cuts the server off from the other servers of its ensemble: its
// container leaves the ensemble's Docker network, so packets between it
// and its peers are dropped, while its clients' connections, which ride
// Docker's default bridge, stay up (the links are re-pointed, resetting
// them, only if Docker moved the published port). A follower cut off goes
// on answering its clients' reads and pings on its own until it gives up
// on the leader, SyncLimit ticks after it last heard from it. Rejoin
// undoes it. It fails for a standalone server.
func (n *ZooKeeperNode) Isolate(ctx context.Context) error {
	if n.ens == nil {
		return errors.New("testbed: Isolate: a standalone ZooKeeper server has no peers")
	}
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	if _, err := cli.NetworkDisconnect(ctx, n.ens.Network, client.NetworkDisconnectOptions{Container: n.ContainerID(), Force: true}); err != nil {
		return fmt.Errorf("testbed: isolate %s: %w", n.name, err)
	}
	return n.followPort(ctx)
}

// Rejoin attaches an isolated server to its ensemble's network again,
// under its name; it rejoins the quorum as a follower.
func (n *ZooKeeperNode) Rejoin(ctx context.Context) error {
	if n.ens == nil {
		return errors.New("testbed: Rejoin: a standalone ZooKeeper server has no peers")
	}
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	ep := &network.EndpointSettings{Aliases: []string{n.name}}
	if _, err := cli.NetworkConnect(ctx, n.ens.Network, client.NetworkConnectOptions{Container: n.ContainerID(), EndpointConfig: ep}); err != nil {
		return fmt.Errorf("testbed: rejoin %s: %w", n.name, err)
	}
	return n.followPort(ctx)
}

// followPort re-points the links if Docker published the client port
// again elsewhere, and leaves them (and their connections) alone if not.
func (n *ZooKeeperNode) followPort(ctx context.Context) error {
	addr, err := mappedAddr(ctx, n.ctr, n.port)
	if err != nil {
		return fmt.Errorf("testbed: %s: %w", n.name, err)
	}
	if addr != n.HostAddr() {
		n.setHostAddr(addr)
	}
	return nil
}
