package testbed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// startTimeout bounds starting a group of containers until they are ready.
const startTimeout = 90 * time.Second

// nodeSpec describes one server container to start.
type nodeSpec struct {
	name    string
	image   string
	port    string // container port the clients use, e.g. "6379/tcp"
	cmd     []string
	env     map[string]string
	files   []fileSpec     // copied in before the first start
	network *dockerNetwork // nil: default bridge only
	aliases []string       // names on network
	// bridge also attaches Docker's default bridge, first, so that the
	// published port does not go through network and survives
	// Node.DisconnectNetwork of it.
	bridge bool
	// tmpfs mounts (path -> options) in the container, empty on every
	// start.
	tmpfs map[string]string
	// data are the server's data directories: each is an anonymous Docker
	// volume (see dataVolumes), unless tmpfs mounts the same path.
	data []string
	// probe reports nil once the server at addr (host:port) serves.
	probe func(ctx context.Context, addr string) error
	// beforeStart resets per-process state before each start.
	beforeStart func()
}

// fileSpec is a file copied into a container before its first start.
type fileSpec struct {
	path    string // absolute path in the container
	content string
	mode    int64 // permission bits, e.g. 0o644
}

// startNodes starts the containers of specs in parallel and waits until
// each answers its probe. Each container is removed when the test ends,
// whatever happens here. It fails the test if any does not start.
func startNodes(t testing.TB, specs []nodeSpec) []*Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	nodes := make([]*Node, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i := range specs {
		wg.Go(func() { nodes[i], errs[i] = startNode(ctx, t, specs[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	return nodes
}

// startNode starts one container; it may run on any goroutine.
func startNode(ctx context.Context, t testing.TB, s nodeSpec) (*Node, error) {
	cli, err := dockerClient()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.name, err)
	}
	cfg := containerConfig{
		Image:        s.image,
		Cmd:          s.cmd,
		Env:          envList(s.env),
		Labels:       labels(),
		ExposedPorts: map[string]struct{}{s.port: {}},
		HostConfig: hostConfig{
			// NET_ADMIN lets PacketLink and CutPeer drop packets with
			// iptables in the container's network namespace.
			CapAdd: []string{"NET_ADMIN"},
			Mounts: dataVolumes(s.data, s.tmpfs),
			Tmpfs:  s.tmpfs,
			// A random host port on the daemon's host: it changes at
			// every start, so refresh reads it back.
			PortBindings: map[string][]portBinding{s.port: {{HostIP: cli.bindIP}}},
		},
	}
	// The container is created on its first network (API 1.41 takes one)
	// and connected to the second before it starts: the default bridge
	// first when bridge is set, so that it carries the published port.
	var later *dockerNetwork
	switch {
	case s.bridge:
		cfg.HostConfig.NetworkMode = "bridge"
		later = s.network
	case s.network != nil:
		cfg.HostConfig.NetworkMode = s.network.Name
		cfg.NetworkingConfig = &networkingConfig{EndpointsConfig: map[string]*endpointSettings{
			s.network.Name: {Aliases: s.aliases},
		}}
	}
	if s.beforeStart != nil {
		s.beforeStart()
	}
	id, err := cli.containerCreate(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", s.name, s.image, err)
	}
	t.Cleanup(func() { terminate(t, id) })
	if later != nil {
		if err := cli.networkConnect(ctx, later.ID, id, s.aliases, netip.Addr{}); err != nil {
			return nil, fmt.Errorf("start %s: connect to network %s: %w", s.name, later.Name, err)
		}
	}
	if len(s.files) > 0 {
		if err := cli.containerUpload(ctx, id, s.files); err != nil {
			return nil, fmt.Errorf("start %s: copy files: %w", s.name, err)
		}
	}
	if err := cli.containerStart(ctx, id); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", s.name, s.image, err)
	}
	if err := waitReady(ctx, id, s.port, s.probe); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", s.name, s.image, err)
	}
	n := &Node{
		t:           t,
		name:        s.name,
		id:          id,
		port:        s.port,
		probe:       s.probe,
		beforeStart: s.beforeStart,
		links:       make(map[string]*Proxy),
		packetLinks: make(map[string]*PacketLink),
		followers:   make(map[*Node]bool),
	}
	n.target = n
	n.followers[n] = true
	t.Cleanup(n.close) // runs before terminate
	if err := n.refresh(ctx); err != nil {
		return nil, err
	}
	if _, err := n.link(""); err != nil {
		return nil, fmt.Errorf("%s: default link: %w", s.name, err)
	}
	return n, nil
}

// envList turns env into the sorted KEY=value list Docker takes.
func envList(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// dataVolumes mounts an anonymous Docker volume at each of paths that
// tmpfs does not mount. A server's data directory lives there, as the
// official images' VOLUME declarations put it, not in the container's
// writable layer: where that layer is fuse-overlayfs, a synchronous write
// costs about twice what it costs on a volume (the host's file system), and
// every fsync-bound figure (etcd's Raft writes, Postgres's WAL flushes,
// Redis's appendfsync always) would measure the FUSE layer. A volume lives as long as its container, like the writable
// layer: it survives Kill, Stop and Start, and Terminate removes it. Each
// carries the testbed's labels, so that make clean-containers finds one
// whose container went some other way.
func dataVolumes(paths []string, tmpfs map[string]string) []mountSpec {
	var ms []mountSpec
	for _, p := range paths {
		if _, ok := tmpfs[p]; !ok {
			ms = append(ms, mountSpec{Type: mountVolume, Target: p, VolumeOptions: &volumeOptions{Labels: labels()}})
		}
	}
	return ms
}

// terminate removes a container with its volumes, unpausing it first; it
// runs in test cleanup.
func terminate(t testing.TB, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := dockerClient()
	if err != nil {
		t.Errorf("testbed: remove container %s: %v", id, err)
		return
	}
	_ = cli.containerUnpause(ctx, id)
	if err := cli.containerRemove(ctx, id); err != nil && !isNotFound(err) {
		t.Errorf("testbed: remove container %s: %v", id, err)
	}
}

// dockerNetwork is a Docker network the testbed created.
type dockerNetwork struct {
	ID, Name string
}

// networkSeq numbers the networks newNetwork creates in this process.
var networkSeq atomic.Int64

// newNetwork creates a private Docker network, with the testbed's labels,
// removed when the test ends.
func newNetwork(t testing.TB) *dockerNetwork {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := dockerClient()
	if err != nil {
		t.Fatalf("testbed: create network: %v", err)
	}
	nw := &dockerNetwork{Name: fmt.Sprintf("distlock-%s-%d", runID, networkSeq.Add(1))}
	nw.ID, err = cli.networkCreate(ctx, nw.Name, false, netip.Prefix{})
	if err != nil {
		t.Fatalf("testbed: create network: %v", err)
	}
	t.Cleanup(func() { // registered before the containers' cleanups, so it runs after they are removed
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cli.networkRemove(ctx, nw.ID); err != nil && !isNotFound(err) {
			t.Errorf("testbed: remove network %s: %v", nw.Name, err)
		}
	})
	return nw
}

// mappedAddr is the host:port the container's port is published on.
func mappedAddr(ctx context.Context, id, port string) (string, error) {
	cli, err := dockerClient()
	if err != nil {
		return "", err
	}
	info, err := cli.containerInspect(ctx, id)
	if err != nil {
		return "", err
	}
	return publishedAddr(cli, info, port)
}

// publishedAddr reads where port is published from a container's
// inspection.
func publishedAddr(cli *engine, info containerInfo, port string) (string, error) {
	for _, b := range info.NetworkSettings.Ports[port] {
		if b.HostPort != "" {
			return net.JoinHostPort(cli.host, b.HostPort), nil
		}
	}
	return "", fmt.Errorf("port %s is not published (container %s)", port, info.State.Status)
}

// waitReady waits until probe succeeds on the published port; it runs
// after the first start and after every Start, for at most startTimeout.
// It fails at once, with the container's log tail, if the container exits.
func waitReady(ctx context.Context, id, port string, probe func(ctx context.Context, addr string) error) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	var last error
	for {
		info, err := cli.containerInspect(ctx, id)
		if err == nil && (info.State.Status == "exited" || info.State.Status == "dead") {
			return fmt.Errorf("container %s (exit code %d) before it was ready; log tail:\n%s",
				info.State.Status, info.State.ExitCode, logTail(ctx, id, 20))
		}
		var addr string
		if err == nil {
			addr, err = publishedAddr(cli, info, port)
		}
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			err = probe(pctx, addr)
			cancel()
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last probe: %v); log tail:\n%s",
				ctx.Err(), last, logTail(context.Background(), id, 20))
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// logTail returns the last n lines of a container's log.
func logTail(ctx context.Context, id string, n int) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cli, err := dockerClient()
	if err != nil {
		return "(logs: " + err.Error() + ")"
	}
	b, err := cli.containerLogs(ctx, id, n)
	if err != nil {
		return "(logs: " + err.Error() + ")"
	}
	return strings.TrimRight(string(b), "\n")
}
