package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/testbed"
	"github.com/distlock/distlock/zklock"
)

// b5ZKLocks is how many locks are held at once in B5.
const b5ZKLocks = 1000

// BenchmarkZKB5Nodes: ZooKeeper state per held lock and what is left
// afterwards. 1,000 keys held at once plus 20 waiters queued on one more
// key (20 lock nodes), for zklock and for go-zookeeper's Lock: lock nodes
// and parent nodes per holder, zk_approximate_data_size (mntr) per lock,
// and the nodes left under each prefix after everything was released, a
// waiter cancelled and a lease left to expire (zklock's parents are
// container nodes, deleted by the server's container manager: checked
// every second in the testbed; the peer's parents are persistent). The
// measurement runs once per call; b.N is not used.
func BenchmarkZKB5Nodes(b *testing.B) {
	z := startZK(b, testbed.ZooKeeperOptions{})
	admin := z.conn(b)
	oursL := z.ours(b, &zklock.Options{Prefix: "/b5"})
	peerConn := z.conn(b)
	ours := zkB5Ours(b, z, admin, oursL)
	peer := zkB5Peer(b, z, admin, peerConn)
	b.ReportMetric(float64(ours.nodes)/b5ZKLocks, "ours-nodes/lock")
	b.ReportMetric(float64(peer.nodes)/b5ZKLocks, "peer-nodes/lock")
	b.ReportMetric(float64(ours.waiting)/20, "ours-nodes/waiter")
	b.ReportMetric(ours.bytes, "ours-B/lock")
	b.ReportMetric(peer.bytes, "peer-B/lock")
	b.ReportMetric(float64(ours.left), "ours-left")
	b.ReportMetric(float64(peer.left), "peer-left")
	b.ReportMetric(0, "ns/op")
}

// zkB5Result is what B5 measures of one implementation: data bytes and
// nodes per held lock, nodes for 20 waiters, nodes left at the end.
type zkB5Result struct {
	bytes   float64
	nodes   int
	waiting int
	left    int
}

// zkB5DataSize returns the ensemble's zk_approximate_data_size (mntr).
func zkB5DataSize(b *testing.B, z *zkEnsemble) int64 {
	out, err := z.e.Nodes[0].FourLetter(context.Background(), "mntr")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "zk_approximate_data_size\t"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	b.Fatal("no zk_approximate_data_size in mntr")
	return 0
}

// zkB5Settle lets followers apply and mntr catch up.
func zkB5Settle() { time.Sleep(300 * time.Millisecond) }

// zkB5Ours measures ours (prefix /b5): b5ZKLocks held, 20 waiters queued
// then cancelled, everything released and one lease left to expire; left
// counts the nodes under /b5 and /b5 itself, polled for up to 15 s.
func zkB5Ours(b *testing.B, z *zkEnsemble, admin *zk.Conn, ours *zklock.Locker) zkB5Result {
	ctx := context.Background()
	var r zkB5Result
	base := zkB5DataSize(b, z)
	leases := make([]distlock.Lease, b5ZKLocks)
	parallelDo(b, b5ZKLocks, func(i int) error {
		ls, err := ours.Acquire(ctx, fmt.Sprintf("k%05d", i))
		leases[i] = ls
		return err
	})
	zkB5Settle()
	r.bytes = float64(zkB5DataSize(b, z)-base) / b5ZKLocks
	r.nodes = countNodes(b, admin, "/b5")
	waitCtx, cancelWaiters := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = ours.Acquire(waitCtx, "k00000")
		}()
	}
	waitFor(b, func() bool { return countNodes(b, admin, "/b5/k00000") == 21 })
	r.waiting = countNodes(b, admin, "/b5/k00000") - 1
	cancelWaiters()
	wg.Wait()
	expiring, err := ours.Acquire(ctx, "expiring", distlock.WithTTL(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	for _, ls := range leases {
		if err := ls.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	<-expiring.Done()        // not released: its node must go all the same
	oursLeft := func() int { // nodes under /b5, and /b5 itself
		n := countNodes(b, admin, "/b5")
		if ok, _, _ := admin.Exists("/b5"); ok {
			n++
		}
		return n
	}
	deadline := time.Now().Add(15 * time.Second)
	r.left = oursLeft()
	for ; r.left > 0 && time.Now().Before(deadline); r.left = oursLeft() {
		time.Sleep(100 * time.Millisecond)
	}
	return r
}

// zkB5Peer measures go-zookeeper's Lock on peerConn under /b5-peer: b5ZKLocks held,
// then released; left counts the nodes under /b5-peer plus /b5-peer
// itself 2 s later.
func zkB5Peer(b *testing.B, z *zkEnsemble, admin *zk.Conn, peerConn *zk.Conn) zkB5Result {
	acl := zk.WorldACL(zk.PermAll)
	var r zkB5Result
	zkB5Settle()
	base := zkB5DataSize(b, z)
	locks := make([]*zk.Lock, b5ZKLocks)
	parallelDo(b, b5ZKLocks, func(i int) error {
		locks[i] = zk.NewLock(peerConn, fmt.Sprintf("/b5-peer/k%05d", i), acl)
		return locks[i].Lock()
	})
	zkB5Settle()
	r.bytes = float64(zkB5DataSize(b, z)-base) / b5ZKLocks
	r.nodes = countNodes(b, admin, "/b5-peer")
	for _, lk := range locks {
		if err := lk.Unlock(); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second)
	r.left = countNodes(b, admin, "/b5-peer") + 1
	return r
}

// parallelDo runs f(0..n-1) on 32 goroutines and fails b on the first error.
func parallelDo(b *testing.B, n int, f func(i int) error) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(b *testing.B, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatal("condition not reached in 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
