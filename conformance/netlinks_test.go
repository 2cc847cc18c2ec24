package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/conformance"
	"github.com/distlock/distlock/testbed"
)

// netLinks is one client's path to some servers (a conformance.Link):
// packet links, each with a latency proxy in front of it for a latency
// client (conformance.LatencyClient).
type netLinks struct {
	client  string
	packet  []*testbed.PacketLink
	proxies []*testbed.Proxy // a latency client's, in packet's order
}

// linkSet makes and keeps the links of every client of one harness: a
// client's packet link to each node, and a latency client's proxies, which
// dial the packet links' fixed addresses (so they need no re-pointing when
// a node restarts or its address moves). The proxies are closed when the
// test ends.
type linkSet struct {
	t     *testing.T
	nodes []*testbed.Node

	mu      sync.Mutex
	proxies map[string][]*testbed.Proxy
}

func newLinkSet(t *testing.T, nodes ...*testbed.Node) *linkSet {
	return &linkSet{t: t, nodes: nodes, proxies: map[string][]*testbed.Proxy{}}
}

// links returns client's links to every node, in node order.
func (s *linkSet) links(client string) netLinks {
	s.t.Helper()
	ls := netLinks{client: client}
	for _, n := range s.nodes {
		ls.packet = append(ls.packet, n.PacketLink(client))
	}
	if !conformance.IsLatencyClient(client) {
		return ls
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ps, ok := s.proxies[client]; ok {
		ls.proxies = ps
		return ls
	}
	for _, l := range ls.packet {
		p, err := testbed.NewProxy(l.Addr())
		if err != nil {
			s.t.Fatalf("latency proxy for %s: %v", client, err)
		}
		s.t.Cleanup(func() { _ = p.Close() })
		ls.proxies = append(ls.proxies, p)
	}
	s.proxies[client] = ls.proxies
	return ls
}

// addrs are the addresses client dials, in node order.
func (s *linkSet) addrs(client string) []string {
	ls := s.links(client)
	out := make([]string, len(ls.packet))
	for i, l := range ls.packet {
		out[i] = l.Addr()
		if len(ls.proxies) > 0 {
			out[i] = ls.proxies[i].Addr()
		}
	}
	return out
}

// perServer splits client's links into one Link per node (ServerLinks).
func (s *linkSet) perServer(client string) []conformance.Link {
	ls := s.links(client)
	out := make([]conformance.Link, len(ls.packet))
	for i := range ls.packet {
		one := netLinks{client: client, packet: ls.packet[i : i+1]}
		if len(ls.proxies) > 0 {
			one.proxies = ls.proxies[i : i+1]
		}
		out[i] = one
	}
	return out
}

// Blackhole drops the client's packets both ways in every server's
// namespace (and, for a latency client, in its proxies first).
func (ls netLinks) Blackhole(ctx context.Context) error {
	for _, p := range ls.proxies {
		p.Blackhole()
	}
	return ls.each(ctx, (*testbed.PacketLink).Cut)
}

// DropReplies drops the servers' packets to the client.
func (ls netLinks) DropReplies(ctx context.Context) error {
	for _, p := range ls.proxies {
		p.DropReplies()
	}
	return ls.each(ctx, (*testbed.PacketLink).DropReplies)
}

// Heal removes every fault and latency.
func (ls netLinks) Heal(ctx context.Context) error {
	for _, p := range ls.proxies {
		p.Heal()
	}
	return ls.each(ctx, (*testbed.PacketLink).Heal)
}

// SetLatency delays a latency client's traffic in its proxies.
func (ls netLinks) SetLatency(_ context.Context, d time.Duration) error {
	if len(ls.proxies) == 0 {
		return fmt.Errorf("client %q has no latency proxy: name it with conformance.LatencyClient", ls.client)
	}
	for _, p := range ls.proxies {
		p.SetLatency(d)
	}
	return nil
}

// each applies f to every packet link at once, so that a fault reaches
// all servers within one container exec of each other.
func (ls netLinks) each(ctx context.Context, f func(*testbed.PacketLink, context.Context) error) error {
	errs := make([]error, len(ls.packet))
	var wg sync.WaitGroup
	for i, l := range ls.packet {
		wg.Go(func() { errs[i] = f(l, ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// partition applies op (CutPeer or HealPeer) between nodes[i] and every
// other node.
func partition(ctx context.Context, nodes []*testbed.Node, i int, op func(*testbed.Node, context.Context, *testbed.Node) error) error {
	for j, o := range nodes {
		if j != i {
			if err := op(nodes[i], ctx, o); err != nil {
				return err
			}
		}
	}
	return nil
}
