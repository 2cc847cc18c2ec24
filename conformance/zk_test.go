package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/conformance"
	"github.com/distlock/distlock/testbed"
	"github.com/distlock/distlock/zklock"
)

// TestZooKeeper runs the suite on a 3-server ZooKeeper 3.8 ensemble
// ("Z3").
func TestZooKeeper(t *testing.T) {
	testbed.RequireDocker(t)
	h, conn := zkHarness(t)
	conformance.Run(t, h)
	// Every lock node is ephemeral: once the sessions of closed Lockers and
	// killed workers have expired (30 s is several session timeouts), an
	// orphan is a bug (a waiter or holder node no error path removed).
	deadline := time.Now().Add(30 * time.Second)
	left := leftNodes(t, conn, "/distlock")
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		left = leftNodes(t, conn, "/distlock")
	}
	if len(left) > 0 {
		t.Errorf("lock nodes left under /distlock after the suite: %s", strings.Join(left, ", "))
	}
}

// zkHarness starts the ensemble, each client reaching each server over its
// own packet link, and returns the harness and an admin connection.
func zkHarness(t *testing.T) (conformance.Harness, *zk.Conn) {
	ens := testbed.StartZooKeeperEnsemble(t, 3, testbed.ZooKeeperOptions{})
	bare := make([]*testbed.Node, len(ens.Nodes))
	for i, n := range ens.Nodes {
		bare[i] = n.Node
	}
	links := newLinkSet(t, bare...)
	// tick_time: the testbed ensemble's tickTime (testbed.ZooKeeperOptions).
	url := func(client string) string {
		return "zk://" + strings.Join(links.addrs(client), ",") + "?tick_time=250ms"
	}
	admin, err := zklock.New(ens.Addrs("admin"), &zklock.Options{TickTime: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	conn, events, err := zk.Connect(ens.Addrs("admin"), 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		for range events {
		}
	})

	roles := newZKRoles(ens)
	servers := roles.servers()
	zadm := &zkAdmin{admin: admin, conn: conn}
	return conformance.Harness{
		Name: "Z3",
		Spec: "Z3",
		TTL:  2 * time.Second,
		NewLocker: func(ctx context.Context, client string) (distlock.Locker, error) {
			return zadm.open(ctx, url(client))
		},
		URL:      url,
		Servers:  servers,
		Minority: []int{0},    // the leader
		Majority: []int{0, 1}, // the leader and a follower
		Links:    func(client string) conformance.Link { return links.links(client) },
		ServerLinks: func(client string) []conformance.Link {
			return roles.serverLinks(context.Background(), links.perServer(client))
		},
		Leader:       roles.leaderRole,
		Isolate:      func(ctx context.Context, i int) error { return roles.roles[i].isolate(ctx) },
		Rejoin:       func(ctx context.Context, i int) error { return roles.roles[i].rejoin(ctx) },
		Revoke:       zadm.revoke,
		GuardedWrite: zadm.guardedWrite,
		GuardedRead:  zadm.guardedRead,
		ClockJump: func(ctx context.Context, i int, d time.Duration) error {
			return servers[i].(*zkRole).clockJump(ctx, d)
		},
	}, conn
}

// zkAdmin is the operator's access to the Z3 harness's ensemble, and the
// Lockers the suite opened, for the guarded writes of their leases.
type zkAdmin struct {
	openedLockers[*zklock.Locker]
	admin *zklock.Locker // for key paths only
	conn  *zk.Conn
}

// guarded is the node of key's guarded value (S32).
func (a *zkAdmin) guarded(key string) string {
	return "/distlock-guarded/" + path.Base(a.admin.Path(key))
}

// revoke deletes the holder's node (the lowest sequence), as an operator
// would.
func (a *zkAdmin) revoke(ctx context.Context, key string) error {
	p := a.admin.Path(key)
	children, _, err := a.conn.Children(p)
	if err != nil {
		return err
	}
	first := ""
	for _, c := range children {
		if first == "" || c[len(c)-10:] < first[len(first)-10:] {
			first = c
		}
	}
	if first == "" {
		return fmt.Errorf("no lock node under %s", p)
	}
	return a.conn.Delete(p+"/"+first, -1)
}

// guardedWrite sets key's guarded value in a ZooKeeper multi that checks
// the holder's node, through the Locker that granted ls.
func (a *zkAdmin) guardedWrite(ctx context.Context, ls distlock.Lease, value string) error {
	p := a.guarded(ls.Key())
	for _, q := range []string{path.Dir(p), p} {
		if _, err := a.conn.Create(q, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	for _, l := range a.all() {
		_, err := l.MultiIfHeld(ctx, ls, &zk.SetDataRequest{Path: p, Data: []byte(value), Version: -1})
		if !errors.Is(err, distlock.ErrInvalidArgument) {
			return err
		}
	}
	return errors.New("no Locker of the suite granted this lease")
}

// guardedRead returns key's guarded value ("" if none was written).
func (a *zkAdmin) guardedRead(ctx context.Context, key string) (string, error) {
	v, _, err := a.conn.Get(a.guarded(key))
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	return string(v), err
}

type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// leftNodes lists the lock nodes still under prefix.
func leftNodes(t *testing.T, conn *zk.Conn, prefix string) []string {
	parents, _, err := conn.Children(prefix)
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range parents {
		children, _, _ := conn.Children(prefix + "/" + p)
		for _, c := range children {
			out = append(out, p+"/"+c)
		}
	}
	return out
}
