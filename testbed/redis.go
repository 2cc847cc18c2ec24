package testbed

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// redisPort is the container port every Redis server listens on.
const redisPort = "6379/tcp"

// redisConf is the config file each server starts from. It is writable
// so that CONFIG REWRITE can make a promotion survive restarts, as Sentinel
// does; /data is the official image's working directory, which its
// entrypoint hands to the redis user.
const redisConf = redisDataDir + "/distlock-redis.conf"

// redisDataDir holds the config file and, with fsync-always, the
// append-only file (the servers run with --dir there); it is a volume
// (see dataVolumes).
const redisDataDir = "/data"

// RedisOptions configures the Redis servers a test starts. Every server
// runs redis-server /data/distlock-redis.conf --dir /data --protected-mode
// no --port 6379 --save "" --repl-diskless-sync-delay 0, then the
// persistence arguments and Args. With TLS, --port 6379 becomes --port 0
// --tls-port 6379 and the certificate settings (see redis_tls.go).
type RedisOptions struct {
	// Persistence: "" or "none" runs volatile servers (--save ""
	// --appendonly no): Kill or Stop loses all data. "fsync-always" runs
	// --appendonly yes --appendfsync always: every acknowledged write
	// survives Kill. RDB snapshots are off in both (--save "").
	Persistence string
	// Args are extra redis-server arguments, appended last.
	Args []string

	// TLS, if set, is the server's certificate (see CA.Server): the server
	// then serves TLS only, on the same container port, so Addr, the
	// links and the packet faults work as without TLS. It needs CA.
	TLS *KeyPair
	// CA is the PEM certificate of the CA the server trusts for client
	// certificates (and replication); required with TLS.
	CA string
	// TLSAuthClients makes the server require a client certificate signed
	// by CA (tls-auth-clients yes; default no: any TLS client).
	TLSAuthClients bool
	// Users, if any, are ACL users with full access; the default user is
	// disabled unless one of them is named "default", so unauthenticated
	// commands fail with NOAUTH. A replica authenticates to its primary
	// as the first user.
	//
	// The testbed's own clients (Admin, the readiness probe, Commands)
	// use TLS with CA as the root, server name "localhost" and, with
	// TLSAuthClients, the server's certificate as their client
	// certificate, and log in as the first user.
	Users []RedisUser
}

// args returns the redis-server command line.
func (o RedisOptions) args(t testing.TB) []string {
	t.Helper()
	cmd := []string{"redis-server", redisConf, "--dir", redisDataDir, "--protected-mode", "no"}
	cmd = append(cmd, o.portArgs(t)...)
	cmd = append(cmd, "--save", "",
		// A primary would wait 5s for more replicas before a full sync.
		"--repl-diskless-sync-delay", "0")
	switch o.Persistence {
	case "", "none":
		cmd = append(cmd, "--appendonly", "no")
	case "fsync-always":
		cmd = append(cmd, "--appendonly", "yes", "--appendfsync", "always")
	default:
		t.Fatalf("testbed: RedisOptions.Persistence %q: want \"\", \"none\" or \"fsync-always\"", o.Persistence)
	}
	return append(cmd, o.Args...)
}

// RedisNode is one Redis server in a container. The embedded Node gives
// its client links (Addr, Link) and faults (Kill, Stop, Start, Restart,
// Pause, Unpause).
type RedisNode struct {
	*Node
	admin  *redis.Client
	access redisAccess // how the testbed's own clients connect (redis_tls.go)

	statsMu sync.Mutex   // serializes Commands
	own     atomic.Int64 // commands the testbed itself sent to the current server process
}

// Admin is a client straight to the server's published port, bypassing the
// links and their faults. It always dials the current port, so it keeps
// working after Start; while the node is down it fails with ErrNodeDown.
// It is closed when the test ends.
func (r *RedisNode) Admin() *redis.Client { return r.admin }

// Commands returns how many commands the server process has executed since
// it last started (INFO stats total_commands_processed), not counting the
// testbed's own readiness probes, replication checks and the INFO calls of
// Commands itself. Commands sent through Admin count, including the go-redis
// connection handshake (HELLO), and so does replication traffic (a primary
// counts its replica's REPLCONF ACKs, a replica the primary's PINGs and
// writes).
func (r *RedisNode) Commands(ctx context.Context) (int64, error) {
	r.statsMu.Lock()
	defer r.statsMu.Unlock()
	info, err := r.do(ctx, "INFO", "stats")
	if err != nil {
		return 0, fmt.Errorf("testbed: %s: INFO stats: %w", r.name, err)
	}
	v, ok := infoField(info, "total_commands_processed")
	if !ok {
		return 0, fmt.Errorf("testbed: %s: no total_commands_processed in INFO stats", r.name)
	}
	total, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("testbed: %s: total_commands_processed %q: %w", r.name, v, err)
	}
	// The INFO is counted in own but not yet in its own reply; its
	// connection's AUTH, if any, is in both.
	return total - (r.own.Load() - 1), nil
}

// do sends one command straight to the server and counts it as the
// testbed's own.
func (r *RedisNode) do(ctx context.Context, args ...string) (string, error) {
	reply, err := respDo(ctx, func(ctx context.Context) (net.Conn, error) { return r.dialOwn(ctx, r.dialDirect) }, args...)
	if err == nil {
		r.own.Add(1)
	}
	return reply, err
}

// probe is the readiness check: PING answered by PONG. A successful probe
// counts as the testbed's own command.
func (r *RedisNode) probe(ctx context.Context, addr string) error {
	reply, err := respDo(ctx, func(ctx context.Context) (net.Conn, error) {
		return r.dialOwn(ctx, func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		})
	}, "PING")
	if err != nil {
		return err
	}
	r.own.Add(1)
	if reply != "PONG" {
		return fmt.Errorf("PING: %q", reply)
	}
	return nil
}

// redisSpec is the container spec of one Redis node; r.Node is set once it
// has started. conf is the initial content of the config file, for
// settings that a CONFIG REWRITE must be able to change across restarts
// (command-line arguments would override the rewritten file).
func redisSpec(t testing.TB, r *RedisNode, name, image string, opts RedisOptions, conf string) nodeSpec {
	t.Helper()
	r.access = opts.access(t)
	return nodeSpec{
		name:  name,
		image: image,
		port:  redisPort,
		cmd:   opts.args(t),
		files: append([]fileSpec{{
			path:    redisConf,
			content: "# written by distlock testbed\n" + opts.authConf(t) + conf,
			mode:    0o644,
		}}, opts.tlsFiles()...),
		data:        []string{redisDataDir},
		probe:       r.probe,
		beforeStart: func() { r.own.Store(0) },
	}
}

// finishRedis attaches the started nodes and their admin clients.
func finishRedis(t testing.TB, rs []*RedisNode, nodes []*Node) {
	for i, r := range rs {
		r.Node = nodes[i]
		r.admin = redis.NewClient(&redis.Options{
			Addr: r.name, // informational: Dialer picks the current port
			Dialer: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return r.dialAdmin(ctx)
			},
			Username:                 r.access.user,
			Password:                 r.access.password,
			DialerRetries:            1,    // fail fast while the node is down
			DisableIdentity:          true, // CLIENT SETINFO needs Redis 7.2
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		})
		t.Cleanup(func() { _ = r.admin.Close() })
	}
}

// StartRedis starts n independent Redis masters in parallel, named
// "redis-0" to "redis-<n-1>". Call RequireDocker first. The containers
// are removed when the test ends.
func StartRedis(t testing.TB, n int, opts RedisOptions) []*RedisNode {
	t.Helper()
	image := Images.Redis.Resolve(t)
	rs := make([]*RedisNode, n)
	specs := make([]nodeSpec, n)
	for i := range rs {
		rs[i] = &RedisNode{}
		specs[i] = redisSpec(t, rs[i], fmt.Sprintf("redis-%d", i), image, opts, "")
	}
	finishRedis(t, rs, startNodes(t, specs))
	return rs
}

// Replicated is a Redis primary with one asynchronous replica on a private
// Docker network, as a Sentinel-managed pair would be.
type Replicated struct {
	// Primary is the master, reachable on the network as "redis-primary".
	Primary *RedisNode
	// Replica replicates Primary, reachable as "redis-replica".
	Replica *RedisNode
	// Network is the name of the private Docker network.
	Network string
}

// replicaSyncTimeout bounds the wait for the replica's first sync.
const replicaSyncTimeout = 30 * time.Second

// StartRedisReplicated starts a primary and a replica (replicaof
// redis-primary 6379) with the same opts, and waits until the replica's
// link to the primary is up. Call RequireDocker first. The containers and
// the network are removed when the test ends.
func StartRedisReplicated(t testing.TB, opts RedisOptions) *Replicated {
	t.Helper()
	image := Images.Redis.Resolve(t)
	nw := newNetwork(t)
	primary, replica := &RedisNode{}, &RedisNode{}
	ps := redisSpec(t, primary, "redis-primary", image, opts, "")
	ps.network, ps.aliases = nw, []string{"redis-primary"}
	rs := redisSpec(t, replica, "redis-replica", image, opts, "replicaof redis-primary 6379\n")
	// The replica's published port rides Docker's default bridge, so that
	// CutReplication can take it off the private network and its clients
	// (Admin, Promote) still reach it.
	rs.network, rs.aliases, rs.bridge = nw, []string{"redis-replica"}, true
	finishRedis(t, []*RedisNode{primary, replica}, startNodes(t, []nodeSpec{ps, rs}))

	ctx, cancel := context.WithTimeout(context.Background(), replicaSyncTimeout)
	defer cancel()
	for {
		info, err := replica.do(ctx, "INFO", "replication")
		if status, _ := infoField(info, "master_link_status"); err == nil && status == "up" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("testbed: replica never synced with primary: %v (last INFO error: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return &Replicated{Primary: primary, Replica: replica, Network: nw.Name}
}

// CutReplication disconnects the replica from the private network: writes
// the primary acknowledges from then on never reach it (a paused replica is
// not enough: its kernel keeps buffering the replication stream and applies
// it on unpause). The primary does not notice until its repl-timeout.
func (r *Replicated) CutReplication(ctx context.Context) error {
	return r.Replica.DisconnectNetwork(ctx, r.Network)
}

// HealReplication reconnects the replica to the private network under its
// alias. It does not make it replicate again: after Promote it stays a
// master.
func (r *Replicated) HealReplication(ctx context.Context) error {
	return r.Replica.ConnectNetwork(ctx, r.Network, "redis-replica")
}

// Promote fails over to the replica: REPLICAOF NO ONE and CONFIG REWRITE on
// the replica (through its Admin client; the rewrite keeps it a master
// across restarts), then every current and future link of the primary is
// routed to the replica's server (see Node.RouteLinksTo), as Sentinel with
// a virtual IP would. Writes acknowledged by the primary but
// not yet replicated are lost, as in a real failover. The former primary
// keeps running; Kill or Pause it to complete the scenario.
func (r *Replicated) Promote(ctx context.Context) error {
	if err := r.Replica.Admin().Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("testbed: promote %s: %w", r.Replica.name, err)
	}
	if err := r.Replica.Admin().ConfigRewrite(ctx).Err(); err != nil {
		return fmt.Errorf("testbed: promote %s: CONFIG REWRITE: %w", r.Replica.name, err)
	}
	r.Primary.RouteLinksTo(r.Replica.Node)
	return nil
}
