package testbed

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdClientPort is the container port every etcd member serves clients on;
// members talk to each other on 2380 over their private network.
const etcdClientPort = "2379/tcp"

// etcdDataDir is the member's data directory. It is a volume (see
// dataVolumes), so it survives Kill and Start (etcd fsyncs its WAL).
const etcdDataDir = "/var/lib/distlock-etcd"

// etcdAdminLink is the link name the testbed's own clients use; tests must
// not inject faults on it.
const etcdAdminLink = "testbed-admin"

// EtcdOptions configures the etcd members a test starts.
type EtcdOptions struct {
	// Args are extra etcd flags, appended last (for example
	// "--heartbeat-interval=50").
	Args []string
	// Tmpfs puts the data directory on a tmpfs: fsync costs nothing, as
	// on a server with a battery-backed disk cache, but Kill and Stop lose
	// everything, so a restarted member cannot rejoin. For benchmarks.
	Tmpfs bool
	// TLS serves clients over TLS (see EtcdTLS); nil: plaintext.
	TLS *EtcdTLS
	// Auth turns authentication on once the cluster runs (see
	// EtcdAuth); nil: none.
	Auth *EtcdAuth
}

// EtcdNode is one etcd member in a container. The embedded Node gives its
// client links (Addr, Link) and process faults (Kill, Stop, Start,
// Restart, Pause, Unpause); Isolate and Rejoin cut it off from its peers.
type EtcdNode struct {
	*Node
	alias    string // DNS name on the peer network, e.g. "etcd-0"
	network  string // the peer network; "" for a single member
	memberID uint64
	admin    *clientv3.Client
}

// Admin is a client of this member alone, through a link of its own that
// tests leave alone, so it keeps working whatever faults the client links
// carry (and after Start). It fails while the member is down.
func (e *EtcdNode) Admin() *clientv3.Client { return e.admin }

// MemberID is the member's etcd ID.
func (e *EtcdNode) MemberID() uint64 { return e.memberID }

// Isolate cuts the member off from the other members (it leaves their
// Docker network) while its clients still reach it through its links: a
// leader keeps believing it leads until it misses a quorum, the others
// elect a new one. It fails for a single member.
func (e *EtcdNode) Isolate(ctx context.Context) error {
	if e.network == "" {
		return errors.New("testbed: Isolate: a single etcd member has no peers")
	}
	return e.DisconnectNetwork(ctx, e.network)
}

// Rejoin undoes Isolate: the member rejoins its peers' network under its
// name, and catches up with the cluster.
func (e *EtcdNode) Rejoin(ctx context.Context) error {
	if e.network == "" {
		return errors.New("testbed: Rejoin: a single etcd member has no peers")
	}
	return e.ConnectNetwork(ctx, e.network, e.alias)
}

// EtcdCluster is one etcd cluster: its members, in the order of their
// names ("etcd-0", ...), and the peer network they share.
type EtcdCluster struct {
	Nodes []*EtcdNode
	// Network is the name of the members' private Docker network ("" for
	// a single member).
	Network string

	tls          *tls.Config // the testbed clients' (etcd_tls.go); nil: plaintext
	rootPassword string      // root's, once authentication is on
}

// Endpoints returns the addresses of the links named client, one per
// member in Nodes order: what an etcd client of that name dials.
func (c *EtcdCluster) Endpoints(client string) []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Link(client).Addr()
	}
	return out
}

// Client returns an etcd client over the links named client, closed when
// the test ends. It uses the cluster's TLS and, with authentication, the
// root user. It does not sync endpoints (the members' advertised URLs
// are names on their private network).
func (c *EtcdCluster) Client(t testing.TB, client string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(c.clientConfig(c.Endpoints(client)))
	if err != nil {
		t.Fatalf("testbed: etcd client %q: %v", client, err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Leader returns the index in Nodes of the member every reachable member
// names as leader, waiting (until ctx ends) while an election is under way
// or the members disagree.
func (c *EtcdCluster) Leader(ctx context.Context) (int, error) {
	for {
		i, err := c.leaderOnce(ctx)
		if err == nil {
			return i, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("testbed: etcd leader: %w (last: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// leaderOnce asks every member for its leader; it succeeds if a majority
// answer and all that answer agree on a leader that is among them (a
// killed leader stays the others' leader until they time out).
func (c *EtcdCluster) leaderOnce(ctx context.Context) (int, error) {
	var leader uint64
	answered := 0
	up := map[uint64]bool{} // members that answered
	for _, n := range c.Nodes {
		if n.HostAddr() == "" {
			continue // down
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := n.admin.Status(sctx, n.Link(etcdAdminLink).Addr())
		cancel()
		if err != nil {
			continue
		}
		if st.Leader == 0 || (leader != 0 && st.Leader != leader) {
			return -1, fmt.Errorf("%s sees leader %x, others %x", n.name, st.Leader, leader)
		}
		leader = st.Leader
		up[st.Header.MemberId] = true
		answered++
	}
	if answered <= len(c.Nodes)/2 {
		return -1, fmt.Errorf("only %d of %d members answered", answered, len(c.Nodes))
	}
	if !up[leader] {
		return -1, fmt.Errorf("leader %x did not answer", leader)
	}
	for i, n := range c.Nodes {
		if n.memberID == leader {
			return i, nil
		}
	}
	return -1, fmt.Errorf("leader %x is not a known member", leader)
}

// probeEtcd is the readiness check: the member accepts connections on its
// client port. etcd only answers clients once its cluster has a quorum, so
// a member restarted while the others are down would never pass an HTTP
// probe (and Start would wait for ever); StartEtcd waits for a leader
// itself.
func probeEtcd(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// etcdArgs is the command line of member i of n.
func etcdArgs(i, n int, opts EtcdOptions) []string {
	name := fmt.Sprintf("etcd-%d", i)
	peerHost := name
	if n == 1 {
		peerHost = "127.0.0.1"
	}
	var cluster []string
	for j := range n {
		h := fmt.Sprintf("etcd-%d", j)
		if n == 1 {
			h = "127.0.0.1"
		}
		cluster = append(cluster, fmt.Sprintf("etcd-%d=http://%s:2380", j, h))
	}
	args := []string{"etcd",
		"--name", name,
		"--data-dir", etcdDataDir,
		"--listen-client-urls", opts.clientScheme() + "://0.0.0.0:2379",
		"--advertise-client-urls", opts.clientScheme() + "://" + peerHost + ":2379",
		"--listen-peer-urls", "http://0.0.0.0:2380",
		"--initial-advertise-peer-urls", "http://" + peerHost + ":2380",
		"--initial-cluster", strings.Join(cluster, ","),
		"--initial-cluster-state", "new",
		"--initial-cluster-token", "distlock-testbed",
		"--logger", "zap",
		"--log-level", "warn",
		// Pre-vote, the default from etcd 3.5 on (3.4 defaults to off): a
		// member cut off from the quorum (by a partition, or because the
		// others froze) campaigns without raising its term. Without it,
		// such a member returns with a higher term, deposes the leader,
		// and when its log is behind it cannot win but forces an election
		// every timeout of its own, leaving the cluster without a leader
		// for several seconds (see TestEtcdFrozenMajorityKeepsLeader).
		"--pre-vote=true",
	}
	args = append(args, opts.tlsArgs()...)
	return append(args, opts.Args...)
}

// etcdReadyTimeout bounds the wait for a new cluster's first leader.
const etcdReadyTimeout = 60 * time.Second

// StartEtcd starts an etcd cluster of n members (1 for a single member, 3
// for the usual cluster) named "etcd-0" to "etcd-<n-1>", and waits until
// they agree on a leader. Members of a cluster talk to each other on a
// private Docker network by name; each container is also attached to
// Docker's default bridge, which carries the published client port, so
// that Isolate cuts peers apart without cutting clients off. Call
// RequireDocker first. Containers and network are removed when the test
// ends.
func StartEtcd(t testing.TB, n int, opts EtcdOptions) *EtcdCluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("testbed: StartEtcd: %d members", n)
	}
	image := Images.Etcd.Resolve(t)
	c := &EtcdCluster{tls: opts.clientTLS(t)}
	files := opts.tlsFiles(t, n)
	specs := make([]nodeSpec, n)
	for i := range specs {
		specs[i] = nodeSpec{
			name:  fmt.Sprintf("etcd-%d", i),
			image: image,
			port:  etcdClientPort,
			cmd:   etcdArgs(i, n, opts),
			data:  []string{etcdDataDir},
			probe: probeEtcd,
			files: files,
		}
		if opts.Tmpfs {
			specs[i].tmpfs = map[string]string{etcdDataDir: "rw,size=512m"}
		}
	}
	if n > 1 {
		nw := newNetwork(t)
		c.Network = nw.Name
		for i := range specs {
			specs[i].network, specs[i].aliases, specs[i].bridge = nw, []string{specs[i].name}, true
		}
	}
	nodes := startNodes(t, specs)
	ctx, cancel := context.WithTimeout(context.Background(), etcdReadyTimeout)
	defer cancel()
	for i, nd := range nodes {
		e := &EtcdNode{Node: nd, alias: specs[i].name, network: c.Network}
		admin, err := clientv3.New(c.clientConfig([]string{nd.Link(etcdAdminLink).Addr()}))
		if err != nil {
			t.Fatalf("testbed: %s: admin client: %v", nd.name, err)
		}
		e.admin = admin
		t.Cleanup(func() { _ = admin.Close() })
		c.Nodes = append(c.Nodes, e)
	}
	for _, e := range c.Nodes {
		for {
			sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
			st, err := e.admin.Status(sctx, e.Link(etcdAdminLink).Addr())
			scancel()
			if err == nil {
				e.memberID = st.Header.MemberId
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("testbed: %s: status: %v", e.name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if _, err := c.Leader(ctx); err != nil {
		t.Fatalf("testbed: etcd cluster never elected a leader: %v", err)
	}
	c.enableAuth(ctx, t, opts.Auth)
	return c
}
