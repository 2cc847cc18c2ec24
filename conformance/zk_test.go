package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/conformance"
	"github.com/distlock/distlock/testbed"
	"github.com/distlock/distlock/zklock"
)

// zkRoles resolve the suite's servers to ensemble members by role when a
// fault starts: Servers[0] is whichever member leads at that moment,
// Servers[1] and [2] followers not taken by another role. So S13 kills
// the leader (forcing an election under a held lease), S14 and S15 hit
// the leader and a follower, and the all-server scenarios hit each member
// once. A role keeps its member until the fault is undone (Start,
// Unpause, a clock jump of 0).
type zkRoles struct {
	e       *testbed.ZooKeeperEnsemble
	mu      sync.Mutex
	claimed map[int]string // member index -> role holding it
}

type zkRole struct {
	r    *zkRoles
	name string
	lead bool
	idx  int // the member while a fault is on; -1 otherwise
}

func (r *zkRoles) servers() []conformance.Server {
	return []conformance.Server{
		&zkRole{r: r, name: "leader", lead: true, idx: -1},
		&zkRole{r: r, name: "follower-a", idx: -1},
		&zkRole{r: r, name: "follower-b", idx: -1},
	}
}

// pick finds the member for a role and claims it.
func (s *zkRole) pick(ctx context.Context) (*testbed.ZooKeeperNode, error) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if s.idx >= 0 {
		return s.r.e.Nodes[s.idx], nil
	}
	leader := -1
	deadline := time.Now().Add(30 * time.Second)
	for leader < 0 && (s.lead || len(s.r.claimed) == 0) {
		var err error
		if leader, err = s.r.e.Leader(ctx); err != nil {
			if time.Now().After(deadline) {
				return nil, err
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if !s.lead && leader < 0 { // followers after another role's fault: the leader may be electing
		leader, _ = s.r.e.Leader(ctx)
	}
	idx := -1
	for i := range s.r.e.Nodes {
		if _, taken := s.r.claimed[i]; taken {
			continue
		}
		if (s.lead && i == leader) || (!s.lead && i != leader) {
			idx = i
			break
		}
		if !s.lead && idx < 0 { // the last free member may have been elected
			idx = i
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("no member free for role %s (leader %d, claimed %v)", s.name, leader, s.r.claimed)
	}
	s.idx = idx
	s.r.claimed[idx] = s.name
	return s.r.e.Nodes[idx], nil
}

func (s *zkRole) done() {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	delete(s.r.claimed, s.idx)
	s.idx = -1
}

func (s *zkRole) current() (*testbed.ZooKeeperNode, error) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if s.idx < 0 {
		return nil, fmt.Errorf("role %s: no fault to undo", s.name)
	}
	return s.r.e.Nodes[s.idx], nil
}

func (s *zkRole) Name() string {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if s.idx >= 0 {
		return s.name + "(" + s.r.e.Nodes[s.idx].Name() + ")"
	}
	return s.name
}

func (s *zkRole) Kill(ctx context.Context) error {
	n, err := s.pick(ctx)
	if err != nil {
		return err
	}
	return n.Kill(ctx)
}

func (s *zkRole) Pause(ctx context.Context) error {
	n, err := s.pick(ctx)
	if err != nil {
		return err
	}
	return n.Pause(ctx)
}

func (s *zkRole) Start(ctx context.Context) error {
	n, err := s.current()
	if err != nil {
		return err
	}
	if err := n.Start(ctx); err != nil {
		return err // keep the member: the scenario's clean-up tries again
	}
	s.done()
	return nil
}

func (s *zkRole) Unpause(ctx context.Context) error {
	n, err := s.current()
	if err != nil {
		return err
	}
	if err := n.Unpause(ctx); err != nil {
		return err // keep the member: the scenario's clean-up tries again
	}
	s.done()
	return nil
}

func (s *zkRole) clockJump(ctx context.Context, d time.Duration) error {
	if d == 0 {
		n, err := s.current()
		if err != nil {
			return err
		}
		defer s.done()
		return n.ClockJump(ctx, 0)
	}
	n, err := s.pick(ctx)
	if err != nil {
		return err
	}
	return n.ClockJump(ctx, d)
}

// TestZooKeeper runs the suite on a 3-server ZooKeeper 3.8 ensemble
// ("Z3"), each client reaching each server over its own packet link.
func TestZooKeeper(t *testing.T) {
	testbed.RequireDocker(t)
	ens := testbed.StartZooKeeperEnsemble(t, 3, testbed.ZooKeeperOptions{})
	bare := make([]*testbed.Node, len(ens.Nodes))
	for i, n := range ens.Nodes {
		bare[i] = n.Node
	}
	links := newLinkSet(t, bare...)
	url := func(client string) string { return "zk://" + strings.Join(links.addrs(client), ",") }
	admin, err := zklock.New(ens.Addrs("admin"), nil)
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

	var mu sync.Mutex
	var lockers []*zklock.Locker // every Locker the suite opened, for the guard
	roles := &zkRoles{e: ens, claimed: map[int]string{}}
	servers := roles.servers()
	guarded := func(key string) string { return "/distlock-guarded/" + path.Base(admin.Path(key)) }
	conformance.Run(t, conformance.Harness{
		Name: "Z3",
		Spec: "Z3",
		TTL:  2 * time.Second,
		NewLocker: func(ctx context.Context, client string) (distlock.Locker, error) {
			l, err := distlock.Open(ctx, url(client))
			if err == nil {
				mu.Lock()
				lockers = append(lockers, l.(*zklock.Locker))
				mu.Unlock()
			}
			return l, err
		},
		URL:      url,
		Servers:  servers,
		Minority: []int{0},    // the leader
		Majority: []int{0, 1}, // the leader and a follower
		Links:    func(client string) conformance.Link { return links.links(client) },
		// An operator deletes the holder's node (the lowest sequence).
		Revoke: func(ctx context.Context, key string) error {
			p := admin.Path(key)
			children, _, err := conn.Children(p)
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
			return conn.Delete(p+"/"+first, -1)
		},
		// A ZooKeeper multi: check the holder's node, set the value.
		GuardedWrite: func(ctx context.Context, ls distlock.Lease, value string) error {
			p := guarded(ls.Key())
			for _, q := range []string{path.Dir(p), p} {
				if _, err := conn.Create(q, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
					return err
				}
			}
			mu.Lock()
			ls2 := append([]*zklock.Locker(nil), lockers...)
			mu.Unlock()
			for _, l := range ls2 {
				_, err := l.Multi(ctx, ls, &zk.SetDataRequest{Path: p, Data: []byte(value), Version: -1})
				if !errors.Is(err, distlock.ErrInvalidArgument) {
					return err
				}
			}
			return errors.New("no Locker of the suite granted this lease")
		},
		GuardedRead: func(ctx context.Context, key string) (string, error) {
			v, _, err := conn.Get(guarded(key))
			if errors.Is(err, zk.ErrNoNode) {
				return "", nil
			}
			return string(v), err
		},
		ClockJump: func(ctx context.Context, i int, d time.Duration) error {
			return servers[i].(*zkRole).clockJump(ctx, d)
		},
	})
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
