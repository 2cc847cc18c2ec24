// Package testbed runs real lock servers (Redis; later Postgres, etcd and
// ZooKeeper) in Docker containers for tests, with per-node and per-link
// fault injection: kill, graceful stop, restart, pause, and through an
// in-process TCP Proxy per client link, partitions, latency and resets.
//
// A test starts servers, points its clients at the nodes' links and
// injects faults:
//
//	func TestFailover(t *testing.T) {
//		testbed.RequireDocker(t) // skips under -short or without Docker
//		nodes := testbed.StartRedis(t, 3, testbed.RedisOptions{})
//		client := redis.NewClient(&redis.Options{Addr: nodes[0].Addr()})
//		nodes[1].Link("client-a").Blackhole() // partition one client-node link
//		_ = nodes[2].Kill(ctx)                 // SIGKILL the server
//		_ = nodes[2].Start(ctx)                // same Addr, data gone
//	}
//
// Faults on a node (Node.Kill, Stop, Start, Restart, Pause, Unpause) hit
// every client; faults on a link (Proxy.Blackhole, SetLatency, Reset) hit
// one client's view of one node. Images says which server images run.
//
// A Proxy stays a live TCP peer of both sides: through a black-holed
// Proxy, each kernel still answers the other's keepalive probes. Where a
// server must see its client as dead, a client dials Node.PacketLink
// instead, whose faults (Cut, DropReplies, DropRequests, Loss) drop
// packets with iptables in the server's network namespace; Node.CutPeer
// partitions two servers the same way.
//
// It talks to the Docker daemon through a small Engine API client of its
// own, written with the standard library: HTTP over the Unix socket
// /var/run/docker.sock, or over the socket or TCP address DOCKER_HOST
// names (unix:// or tcp://). So the package, which every backend's tests
// import, adds no container tooling module to a program's go.sum
// (scripts/depcheck.sh checks that). Published ports are bound to
// 127.0.0.1 (all addresses when DOCKER_HOST names another host, which is
// then where they are reached). Every container, network and volume it
// creates carries the labels LabelTestbed and LabelRun, and is removed
// when the test that created it ends, also when the test fails.
package testbed
