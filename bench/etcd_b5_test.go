package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
)

// BenchmarkEtcdB5State: server state per held lock and what is left
// behind, for etcdlock and concurrency.Mutex, on a fresh cluster: keys per
// held lock and etcd leases per 100 held locks (one client holding 100
// keys of one TTL); keys per queued waiter (8 waiters on one key); keys
// left after all release, after 8 waiters are cancelled, and after 100
// locks expire unreleased (ours: TTL 2 s without extension; the Mutex has
// no per-lock expiry: its keys stay while the session lives); leases left
// one TTL after the last release (ours revokes an unused lease after a
// TTL; a Session lives until closed). Run with -benchtime=1x.
func BenchmarkEtcdB5State(b *testing.B) {
	e := startEtcd(b)
	st := &etcdB5{e: e, admin: e.client(b), ttl: 2 * time.Second}
	b.Run("ours", func(b *testing.B) {
		for range b.N {
			st.ours(b)
		}
	})
	b.Run("peer", func(b *testing.B) {
		for range b.N {
			st.peer(b)
		}
	})
}

// etcdB5N is how many locks one client holds in BenchmarkEtcdB5State.
const etcdB5N = 100

// etcdB5 is the cluster BenchmarkEtcdB5State measures and its TTL.
type etcdB5 struct {
	e     *etcdCluster
	admin *clientv3.Client
	ttl   time.Duration
}

// count returns how many keys start with prefix.
func (st *etcdB5) count(b *testing.B, prefix string) float64 {
	resp, err := st.admin.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		b.Fatal(err)
	}
	return float64(resp.Count)
}

// leases returns how many leases the cluster holds.
func (st *etcdB5) leases(b *testing.B) float64 {
	resp, err := st.admin.Leases(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return float64(len(resp.Leases))
}

// ours runs one round of BenchmarkEtcdB5State on etcdlock.
func (st *etcdB5) ours(b *testing.B) {
	ctx, n, ttl := context.Background(), etcdB5N, st.ttl
	prefix := fmt.Sprintf("b5-ours-%d/", time.Now().UnixNano())
	l := st.e.ours(b, &etcdlock.Options{Prefix: prefix})
	before := st.leases(b)
	held := make([]distlock.Lease, n)
	for i := range held {
		ls, err := l.Acquire(ctx, fmt.Sprint("k", i), distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Minute))
		if err != nil {
			b.Fatal(err)
		}
		held[i] = ls
	}
	st.reportHeld(b, prefix, before, func(wctx context.Context) error {
		_, err := l.Acquire(wctx, "k0", distlock.WithTTL(ttl))
		return err
	})
	for _, ls := range held {
		if err := ls.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(st.count(b, prefix), "keys-left-after-release")
	for i := range n {
		if _, err := l.Acquire(ctx, fmt.Sprint("x", i), distlock.WithTTL(ttl)); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(ttl + time.Second)
	b.ReportMetric(st.count(b, prefix), "keys-left-after-expiry")
	time.Sleep(2 * ttl)
	b.ReportMetric(st.leases(b)-before, "leases-left-after-idle")
}

// peer runs one round of BenchmarkEtcdB5State on concurrency.Mutex.
func (st *etcdB5) peer(b *testing.B) {
	ctx, n, ttl := context.Background(), etcdB5N, st.ttl
	prefix := fmt.Sprintf("b5-peer-%d/", time.Now().UnixNano())
	before := st.leases(b)
	s, err := concurrency.NewSession(st.e.client(b), concurrency.WithTTL(int(ttl/time.Second)))
	if err != nil {
		b.Fatal(err)
	}
	held := make([]*concurrency.Mutex, n)
	for i := range held {
		held[i] = concurrency.NewMutex(s, fmt.Sprint(prefix, "k", i))
		if err := held[i].Lock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	st.reportHeld(b, prefix, before, func(wctx context.Context) error {
		ws, err := concurrency.NewSession(st.e.client(b), concurrency.WithTTL(int(ttl/time.Second)))
		if err != nil {
			return err
		}
		defer ws.Close()
		return concurrency.NewMutex(ws, prefix+"k0").Lock(wctx)
	})
	for _, m := range held {
		if err := m.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(st.count(b, prefix), "keys-left-after-release")
	time.Sleep(2 * ttl)
	b.ReportMetric(st.leases(b)-before, "leases-left-after-idle")
	_ = s.Close()
}

// reportHeld reports, with etcdB5N locks held under prefix, the keys per
// lock, the leases per 100 locks (over before), the keys per waiter queued
// on k0 by wait, and the keys left once those waiters are cancelled.
func (st *etcdB5) reportHeld(b *testing.B, prefix string, before float64, wait func(ctx context.Context) error) {
	n := float64(etcdB5N)
	b.ReportMetric(st.count(b, prefix)/n, "keys/lock")
	b.ReportMetric((st.leases(b)-before)*100/n, "leases/100locks")
	b.ReportMetric(queued(b, st.e, wait, func() float64 { return st.count(b, prefix+"k0/") - 1 }), "keys/waiter")
	b.ReportMetric(st.count(b, prefix)-n, "keys-left-after-cancel")
}

// queued starts waiters Acquire calls (wait) on a held key, measures
// perWaiter (keys added per waiter) once they are all queued, cancels
// them and waits for them to return.
func queued(b *testing.B, e *etcdCluster, wait func(ctx context.Context) error, keys func() float64) float64 {
	b.Helper()
	const waiters = 8
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, waiters)
	for range waiters {
		go func() { done <- wait(ctx) }()
	}
	deadline := time.Now().Add(20 * time.Second)
	for keys() < waiters && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	per := keys() / waiters
	cancel()
	for range waiters {
		if err := <-done; err == nil {
			b.Fatal("a waiter acquired a held key")
		}
	}
	return per
}
