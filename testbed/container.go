package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"
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
	files   []fileSpec                    // copied in before the first start
	network *testcontainers.DockerNetwork // nil: default bridge only
	aliases []string                      // names on network
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
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithCmd(s.cmd...),
		testcontainers.WithExposedPorts(s.port),
		testcontainers.WithLabels(labels()),
		testcontainers.WithWaitStrategy(probeStrategy{port: s.port, probe: s.probe}),
		testcontainers.WithLogger(tclog.TestLogger(t)),
	}
	if len(s.env) > 0 {
		opts = append(opts, testcontainers.WithEnv(s.env))
	}
	if len(s.files) > 0 {
		files := make([]testcontainers.ContainerFile, len(s.files))
		for i, f := range s.files {
			files[i] = testcontainers.ContainerFile{Reader: strings.NewReader(f.content), ContainerFilePath: f.path, FileMode: f.mode}
		}
		opts = append(opts, testcontainers.WithFiles(files...))
	}
	if s.bridge {
		opts = append(opts, network.WithBridgeNetwork())
	}
	if len(s.tmpfs) > 0 {
		opts = append(opts, testcontainers.WithTmpfs(s.tmpfs))
	}
	// NET_ADMIN lets PacketLink and CutPeer drop packets with iptables in
	// the container's network namespace. A host-config modifier replaces
	// testcontainers' default one, which copies the request's deprecated
	// host fields (Binds, Resources, ShmSize...): set such fields in a
	// modifier (they chain), not in the request.
	opts = append(opts, testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		hc.CapAdd = append(hc.CapAdd, "NET_ADMIN")
	}))
	if v := dataVolumes(s.data, s.tmpfs); len(v) > 0 {
		opts = append(opts, testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.Mounts = append(hc.Mounts, v...)
		}))
	}
	if s.network != nil {
		opts = append(opts, network.WithNetwork(s.aliases, s.network))
	}
	if s.beforeStart != nil {
		s.beforeStart()
	}
	ctr, err := testcontainers.Run(ctx, s.image, opts...)
	t.Cleanup(func() { terminate(t, ctr) }) // before the error check: Run may return a container with an error
	if err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", s.name, s.image, err)
	}
	n := &Node{
		t:           t,
		name:        s.name,
		ctr:         ctr,
		port:        s.port,
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
func dataVolumes(paths []string, tmpfs map[string]string) []mount.Mount {
	var ms []mount.Mount
	for _, p := range paths {
		if _, ok := tmpfs[p]; !ok {
			ms = append(ms, mount.Mount{Type: mount.TypeVolume, Target: p,
				VolumeOptions: &mount.VolumeOptions{Labels: labels()}})
		}
	}
	return ms
}

// terminate removes a container, unpausing it first; it runs in test
// cleanup.
func terminate(t testing.TB, ctr *testcontainers.DockerContainer) {
	if ctr == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if cli, err := dockerClient(); err == nil {
		_, _ = cli.ContainerUnpause(ctx, ctr.GetContainerID(), client.ContainerUnpauseOptions{})
	}
	if err := ctr.Terminate(ctx, testcontainers.StopTimeout(0)); err != nil && !errdefs.IsNotFound(err) {
		t.Errorf("testbed: remove container %s: %v", ctr.GetContainerID(), err)
	}
}

// newNetwork creates a private Docker network removed when the test ends.
func newNetwork(t testing.TB) *testcontainers.DockerNetwork {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nw, err := network.New(ctx, network.WithLabels(labels()))
	t.Cleanup(func() { // registered first, so it runs after the containers are removed
		if nw == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := nw.Remove(ctx); err != nil && !errdefs.IsNotFound(err) {
			t.Errorf("testbed: remove network %s: %v", nw.Name, err)
		}
	})
	if err != nil {
		t.Fatalf("testbed: create network: %v", err)
	}
	return nw
}

// mappedAddr is the host:port a container port is published on.
func mappedAddr(ctx context.Context, target wait.StrategyTarget, port string) (string, error) {
	host, err := target.Host(ctx)
	if err != nil {
		return "", fmt.Errorf("host: %w", err)
	}
	p, err := target.MappedPort(ctx, port)
	if err != nil {
		return "", fmt.Errorf("mapped port %s: %w", port, err)
	}
	return net.JoinHostPort(host, p.Port()), nil
}

// probeStrategy waits until a probe of the published port succeeds; it
// runs after the first start and after every Start. It fails at once,
// with the container's log tail, if the container exits.
type probeStrategy struct {
	port  string
	probe func(ctx context.Context, addr string) error
}

// WaitUntilReady implements wait.Strategy.
func (s probeStrategy) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
	var last error
	for {
		state, err := target.State(ctx)
		if err == nil && (state.Status == "exited" || state.Status == "dead") {
			return fmt.Errorf("container %s (exit code %d) before it was ready; log tail:\n%s",
				state.Status, state.ExitCode, logTail(ctx, target, 20))
		}
		addr, err := mappedAddr(ctx, target, s.port)
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			err = s.probe(pctx, addr)
			cancel()
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last probe: %v); log tail:\n%s",
				ctx.Err(), last, logTail(context.Background(), target, 20))
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// String describes the strategy in testcontainers' log.
func (s probeStrategy) String() string { return "probe of " + s.port }

// logTail returns the last n lines of a container's log.
func logTail(ctx context.Context, target wait.StrategyTarget, n int) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rc, err := target.Logs(ctx)
	if err != nil {
		return "(logs: " + err.Error() + ")"
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
