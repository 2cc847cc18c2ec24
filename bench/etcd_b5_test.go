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
	admin := e.client(b)
	ctx := context.Background()
	count := func(prefix string) float64 {
		resp, err := admin.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			b.Fatal(err)
		}
		return float64(resp.Count)
	}
	leases := func() float64 {
		resp, err := admin.Leases(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return float64(len(resp.Leases))
	}
	const n = 100
	ttl := 2 * time.Second
	b.Run("ours", func(b *testing.B) {
		for range b.N {
			prefix := fmt.Sprintf("b5-ours-%d/", time.Now().UnixNano())
			l := e.ours(b, &etcdlock.Options{Prefix: prefix})
			before := leases()
			held := make([]distlock.Lease, n)
			for i := range held {
				ls, err := l.Acquire(ctx, fmt.Sprint("k", i), distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Minute))
				if err != nil {
					b.Fatal(err)
				}
				held[i] = ls
			}
			b.ReportMetric(count(prefix)/n, "keys/lock")
			b.ReportMetric((leases()-before)*100/n, "leases/100locks")
			b.ReportMetric(queued(b, e, func(wctx context.Context) error {
				_, err := l.Acquire(wctx, "k0", distlock.WithTTL(ttl))
				return err
			}, func() float64 { return count(prefix+"k0/") - 1 }), "keys/waiter")
			b.ReportMetric(count(prefix)-n, "keys-left-after-cancel")
			for _, ls := range held {
				if err := ls.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(count(prefix), "keys-left-after-release")
			for i := range n {
				if _, err := l.Acquire(ctx, fmt.Sprint("x", i), distlock.WithTTL(ttl)); err != nil {
					b.Fatal(err)
				}
			}
			time.Sleep(ttl + time.Second)
			b.ReportMetric(count(prefix), "keys-left-after-expiry")
			time.Sleep(2 * ttl)
			b.ReportMetric(leases()-before, "leases-left-after-idle")
		}
	})
	b.Run("peer", func(b *testing.B) {
		for range b.N {
			prefix := fmt.Sprintf("b5-peer-%d/", time.Now().UnixNano())
			before := leases()
			s, err := concurrency.NewSession(e.client(b), concurrency.WithTTL(int(ttl/time.Second)))
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
			b.ReportMetric(count(prefix)/n, "keys/lock")
			b.ReportMetric((leases()-before)*100/n, "leases/100locks")
			b.ReportMetric(queued(b, e, func(wctx context.Context) error {
				ws, err := concurrency.NewSession(e.client(b), concurrency.WithTTL(int(ttl/time.Second)))
				if err != nil {
					return err
				}
				defer ws.Close()
				return concurrency.NewMutex(ws, prefix+"k0").Lock(wctx)
			}, func() float64 { return count(prefix+"k0/") - 1 }), "keys/waiter")
			b.ReportMetric(count(prefix)-n, "keys-left-after-cancel")
			for _, m := range held {
				if err := m.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(count(prefix), "keys-left-after-release")
			time.Sleep(2 * ttl)
			b.ReportMetric(leases()-before, "leases-left-after-idle")
			_ = s.Close()
		}
	})
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
