package conformance_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/conformance"
	"github.com/distlock/distlock/etcdlock"
	"github.com/distlock/distlock/testbed"
)

// guardedKey is where the etcd harness's guarded writes (S32) go.
func guardedKey(key string) string { return "conformance-guarded/" + key }

// TestEtcd runs the suite on a 3-member etcd cluster ("E3").
func TestEtcd(t *testing.T) {
	testbed.RequireDocker(t)
	conformance.Run(t, etcdHarness(t))
}

// etcdHarness starts 3 etcd members, each client reaching each member
// over its own packet link. Minority is the leader at start-up (S13 kills
// the leader, the harder case; the etcdlock tests also kill a follower,
// with locks held and waiting), Majority the leader and the next member.
// TTL 2 s: the server's minimum lease TTL with the default 1 s election
// timeout.
func etcdHarness(t *testing.T) conformance.Harness {
	c := testbed.StartEtcd(t, 3, testbed.EtcdOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ld, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	admin := etcdAdmin{c.Client(t, "conformance-admin")}
	servers := make([]conformance.Server, len(c.Nodes))
	bare := make([]*testbed.Node, len(c.Nodes))
	for i, n := range c.Nodes {
		servers[i], bare[i] = n, n.Node
	}
	links := newLinkSet(t, bare...)
	url := func(client string) string { return "etcd://" + strings.Join(links.addrs(client), ",") }
	opened := &etcdLockers{}
	return conformance.Harness{
		Name: "E3",
		Spec: "E3",
		TTL:  2 * time.Second,
		NewLocker: func(ctx context.Context, client string) (distlock.Locker, error) {
			return opened.open(ctx, url(client))
		},
		URL:          url,
		Servers:      servers,
		Minority:     []int{ld},
		Majority:     []int{ld, (ld + 1) % len(c.Nodes)},
		Links:        func(client string) conformance.Link { return links.links(client) },
		ServerLinks:  links.perServer,
		Revoke:       admin.revoke,
		Holders:      admin.holders,
		GuardedWrite: opened.guardedWrite,
		GuardedRead:  admin.guardedRead,
		Leader:       c.Leader,
		// A member is cut off from the others at the packet level; its
		// clients' links stay up.
		Isolate: func(ctx context.Context, i int) error { return partition(ctx, bare, i, (*testbed.Node).CutPeer) },
		Rejoin:  func(ctx context.Context, i int) error { return partition(ctx, bare, i, (*testbed.Node).HealPeer) },
	}
}

// openedLockers keeps every Locker of type L a harness opened by URL, for
// the guarded writes of their leases (E3, Z3).
type openedLockers[L distlock.Locker] struct {
	mu      sync.Mutex
	lockers []L
}

// open opens a Locker by URL and keeps it.
func (o *openedLockers[L]) open(ctx context.Context, url string) (distlock.Locker, error) {
	l, err := distlock.Open(ctx, url)
	if err == nil {
		o.mu.Lock()
		o.lockers = append(o.lockers, l.(L))
		o.mu.Unlock()
	}
	return l, err
}

// all returns the Lockers opened so far.
func (o *openedLockers[L]) all() []L {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]L(nil), o.lockers...)
}

// etcdLockers are the E3 harness's Lockers.
type etcdLockers struct {
	openedLockers[*etcdlock.Locker]
}

// guardedWrite puts value at guardedKey(ls.Key()) in a transaction that
// applies only while ls is held, through the Locker that holds ls.
func (o *etcdLockers) guardedWrite(ctx context.Context, ls distlock.Lease, value string) error {
	for _, l := range o.all() {
		if _, err := l.HeldCmp(ls); err != nil {
			continue
		}
		_, err := l.TxnIfHeld(ctx, ls, clientv3.OpPut(guardedKey(ls.Key()), value))
		return err
	}
	return fmt.Errorf("lease of %s not held through any open Locker: %w", ls.Key(), distlock.ErrLeaseLost)
}

// etcdAdmin is the operator's client of the E3 harness.
type etcdAdmin struct{ cli *clientv3.Client }

// revoke revokes the etcd lease of key's holder, as an operator would
// (etcdctl lease revoke).
func (a etcdAdmin) revoke(ctx context.Context, key string) error {
	resp, err := a.cli.Get(ctx, key+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return err
	}
	if len(resp.Kvs) == 0 {
		return fmt.Errorf("no holder of %s", key)
	}
	_, err = a.cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	return err
}

// holders counts the entries under key (holder and waiters).
func (a etcdAdmin) holders(ctx context.Context, key string) (int, error) {
	resp, err := a.cli.Get(ctx, key+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return int(resp.Count), nil
}

// guardedRead returns the value last applied at guardedKey(key).
func (a etcdAdmin) guardedRead(ctx context.Context, key string) (string, error) {
	resp, err := a.cli.Get(ctx, guardedKey(key))
	if err != nil || len(resp.Kvs) == 0 {
		return "", err
	}
	return string(resp.Kvs[0].Value), nil
}
