package testbed

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// zkClientPort is the container port every ZooKeeper server serves
// clients on; peers talk on 2888 (quorum) and 3888 (election).
const zkClientPort = "2181/tcp"

// zkFaketimeFile holds the server's wall-clock offset for libfaketime
// (see ZooKeeperNode.ClockJump); the entry script resets it to +0 at every
// start.
const zkFaketimeFile = "/tmp/distlock-faketime"

// zkCommandTimeout bounds one four-letter-word command.
const zkCommandTimeout = 2 * time.Second

// zkServingTimeout bounds the wait for a (re)started server to join a
// quorum and serve clients.
const zkServingTimeout = 60 * time.Second

// zkRejoinTimeout and zkRejoinAttempts bound Start's wait for a restarted
// member of an ensemble: each attempt waits zkRejoinTimeout (a restarted
// member usually serves within 1-1.5 s), then the member is restarted.
const (
	zkRejoinTimeout  = 20 * time.Second
	zkRejoinAttempts = 3
)

// ZooKeeperOptions configures the ZooKeeper servers a test starts.
type ZooKeeperOptions struct {
	// TickTime is ZooKeeper's basic time unit. Default 250 ms. Sessions
	// may last from MinSessionTimeout to MaxSessionTimeout whatever the
	// tick; initLimit is 20 ticks.
	TickTime time.Duration
	// SyncLimit is syncLimit, in ticks: how long a follower goes without
	// word from its leader (and the leader without word from it) before
	// it gives up, and so how long a follower cut off from the leader
	// keeps serving its clients' reads. Default 8.
	SyncLimit int
	// MinSessionTimeout and MaxSessionTimeout bound the session timeouts
	// the servers grant. Defaults 500 ms and 60 s.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// Heap is the JVM's -Xmx. Default "128m".
	Heap string
	// NoFsync sets forceSync=no: the transaction log is written but not
	// fsynced, so writes cost the quorum round trip only. It still
	// survives Kill (the host's page cache keeps it), not a host crash.
	// For benchmarks that compare client libraries on a loaded disk.
	NoFsync bool
	// SuperPassword, if set, is the password of the digest user
	// ZooKeeperSuperUser, whom ACLs do not restrict (see
	// zookeeper_auth.go).
	SuperPassword string
	// RequireAuth refuses every request of a session that has not
	// authenticated with the digest scheme (enforce.auth.enabled).
	RequireAuth bool
	// TLS, if set, serves clients over TLS (see ZooKeeperTLS).
	TLS *ZooKeeperTLS
}

func (o ZooKeeperOptions) withDefaults() ZooKeeperOptions {
	if o.TickTime == 0 {
		o.TickTime = 250 * time.Millisecond
	}
	if o.SyncLimit == 0 {
		o.SyncLimit = 8
	}
	if o.MinSessionTimeout == 0 {
		o.MinSessionTimeout = 500 * time.Millisecond
	}
	if o.MaxSessionTimeout == 0 {
		o.MaxSessionTimeout = 60 * time.Second
	}
	if o.Heap == "" {
		o.Heap = "128m"
	}
	return o
}

// config returns zoo.cfg for servers (the peers' names; one name: standalone).
func (o ZooKeeperOptions) config(servers []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\ninitLimit=20\nsyncLimit=%d\n", o.TickTime.Milliseconds(), o.SyncLimit)
	fmt.Fprintf(&b, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", o.MinSessionTimeout.Milliseconds(), o.MaxSessionTimeout.Milliseconds())
	b.WriteString("dataDir=/data\n4lw.commands.whitelist=*\nadmin.enableServer=false\n")
	if o.TLS == nil {
		b.WriteString("clientPort=2181\n")
	}
	b.WriteString(o.tlsConfig() + o.authConfig())
	if o.NoFsync {
		b.WriteString("forceSync=no\n")
	}
	if len(servers) > 1 {
		b.WriteString("quorumListenOnAllIPs=true\n")
		for i, s := range servers {
			fmt.Fprintf(&b, "server.%d=%s:2888:3888\n", i+1, s)
		}
	}
	return b.String()
}

// zkEntry is the container's command: it writes myid, resets the clock
// offset and runs the server in the foreground under libfaketime with a
// small heap. The JVM needs FAKETIME_DONT_FAKE_MONOTONIC=1 and
// FAKETIME_FORCE_MONOTONIC_FIX=0 (without the latter it spins on a core);
// FAKETIME_NO_CACHE=1 makes a rewrite of the offset file apply at once.
// The container manager checks every second, so empty lock parents
// (container nodes) go soon.
func zkEntry(id int, heap, classpath string) []string {
	script := strings.Join([]string{
		"mkdir -p /data",
		fmt.Sprintf("echo %d > /data/myid", id),
		"echo +0 > " + zkFaketimeFile,
		"export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 FAKETIME_TIMESTAMP_FILE=" + zkFaketimeFile +
			" FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_FORCE_MONOTONIC_FIX=0",
		"exec java -Xmx" + heap + " -Xss512k -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto" +
			" -Dzookeeper.root.logger=WARN,CONSOLE -Dzookeeper.console.threshold=WARN" +
			" -Dznode.container.checkIntervalMs=1000 -Dzookeeper.cnxTimeout=1000" +
			" -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar" + classpath +
			" org.apache.zookeeper.server.quorum.QuorumPeerMain /conf/zoo.cfg",
	}, "\n")
	return []string{"sh", "-c", script}
}

// ZooKeeperNode is one ZooKeeper server in a container. The embedded Node
// gives its client links (Addr, Link) and Pause/Unpause; Kill, Stop, Start
// and Restart are wrapped so that a restarted server of an ensemble is
// waited for until it serves again (when a quorum is up).
type ZooKeeperNode struct {
	*Node
	ens *ZooKeeperEnsemble // nil for a standalone server
	up  bool               // guarded by ens.mu (standalone: unused)
}

// ZooKeeperEnsemble is n ZooKeeper servers forming one quorum on a private
// Docker network, reachable from each other as "zk-0" to "zk-<n-1>".
type ZooKeeperEnsemble struct {
	Nodes []*ZooKeeperNode
	// Network is the name of the private Docker network.
	Network string

	mu sync.Mutex
}

// zkSpec is the container spec of one server.
func zkSpec(name, image string, id int, conf string, o ZooKeeperOptions) nodeSpec {
	return nodeSpec{
		name:  name,
		image: image,
		port:  zkClientPort,
		cmd:   zkEntry(id, o.Heap, o.classpath()),
		data:  []string{"/data"}, // dataDir in zoo.cfg
		files: append([]fileSpec{{
			path:    "/conf/zoo.cfg",
			content: "# written by distlock testbed\n" + conf,
			mode:    0o644,
		}}, o.tlsFiles()...),
		probe: func(ctx context.Context, addr string) error {
			if o.tlsOnly() {
				return o.tlsProbe(ctx, addr)
			}
			reply, err := fourLetter(ctx, addr, "ruok")
			if err == nil && reply != "imok" {
				err = fmt.Errorf("ruok: %q", reply)
			}
			return err
		},
	}
}

// StartZooKeeper starts one standalone ZooKeeper server named "zk". Call
// RequireDocker first. The container is removed when the test ends.
func StartZooKeeper(t testing.TB, opts ZooKeeperOptions) *ZooKeeperNode {
	t.Helper()
	o := opts.withDefaults()
	spec := zkSpec("zk", Images.ZooKeeper.Resolve(t), 1, o.config([]string{"zk"}), o)
	n := &ZooKeeperNode{Node: startNodes(t, []nodeSpec{spec})[0]}
	ctx, cancel := context.WithTimeout(context.Background(), zkServingTimeout)
	defer cancel()
	wait := n.waitServing
	if o.tlsOnly() {
		wait = func(ctx context.Context) error { return o.waitServingTLS(ctx, n) }
	}
	if err := wait(ctx); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	return n
}

// StartZooKeeperEnsemble starts an ensemble of n servers (n >= 3 for a
// tolerated failure) in parallel and waits until every one serves. Call
// RequireDocker first. The containers and the network are removed when the
// test ends.
func StartZooKeeperEnsemble(t testing.TB, n int, opts ZooKeeperOptions) *ZooKeeperEnsemble {
	t.Helper()
	if n < 1 {
		t.Fatalf("testbed: ZooKeeper ensemble of %d servers", n)
	}
	o := opts.withDefaults()
	if o.tlsOnly() {
		t.Fatalf("testbed: a ZooKeeper ensemble serves TLS only with ZooKeeperTLS.Plaintext")
	}
	image := Images.ZooKeeper.Resolve(t)
	nw := newNetwork(t)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("zk-%d", i)
	}
	conf := o.config(names)
	specs := make([]nodeSpec, n)
	for i := range specs {
		specs[i] = zkSpec(names[i], image, i+1, conf, o)
		specs[i].network, specs[i].aliases = nw, []string{names[i]}
	}
	e := &ZooKeeperEnsemble{Network: nw.Name}
	for _, node := range startNodes(t, specs) {
		e.Nodes = append(e.Nodes, &ZooKeeperNode{Node: node, ens: e, up: true})
	}
	ctx, cancel := context.WithTimeout(context.Background(), zkServingTimeout)
	defer cancel()
	if err := e.WaitServing(ctx); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	return e
}

// ConnectString is "addr1,addr2,..." of client's links to every server,
// in node order: a ZooKeeper connect string without chroot.
func (e *ZooKeeperEnsemble) ConnectString(client string) string {
	return strings.Join(e.Addrs(client), ",")
}

// Addrs are the addresses of client's links to every server, in node order.
func (e *ZooKeeperEnsemble) Addrs(client string) []string {
	out := make([]string, len(e.Nodes))
	for i, n := range e.Nodes {
		out[i] = n.Link(client).Addr()
	}
	return out
}

// Links are client's links to every server, in node order.
func (e *ZooKeeperEnsemble) Links(client string) []*Proxy {
	out := make([]*Proxy, len(e.Nodes))
	for i, n := range e.Nodes {
		out[i] = n.Link(client)
	}
	return out
}

// WaitServing waits until every running server serves clients (is the
// leader or a follower), or ctx ends.
func (e *ZooKeeperEnsemble) WaitServing(ctx context.Context) error {
	for _, n := range e.Nodes {
		e.mu.Lock()
		up := n.up
		e.mu.Unlock()
		if up {
			if err := n.waitServing(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// Leader returns the index of the server that is the leader now, or an
// error if none of the running servers says it is.
func (e *ZooKeeperEnsemble) Leader(ctx context.Context) (int, error) {
	var errs []string
	for i, n := range e.Nodes {
		mode, err := n.Mode(ctx)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if mode == "leader" {
			return i, nil
		}
	}
	return -1, fmt.Errorf("testbed: no ZooKeeper leader (%s)", strings.Join(errs, "; "))
}
