package bench

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/migrate"
)

// migrateEnv is the pair of servers the migrate benchmarks run against: a
// single Redis (redissingle, the old backend: from) and a 3-member etcd
// cluster (etcdlock, the new backend: to).
type migrateEnv struct {
	redis *server
	etcd  *etcdCluster
}

func startMigrateEnv(b *testing.B) *migrateEnv {
	b.Helper()
	return &migrateEnv{redis: startRedis(b), etcd: startEtcd(b)}
}

// from and to return a backend Locker on its own client, closed when b
// ends.
func (m *migrateEnv) from(b *testing.B) distlock.Locker { return newLocker(b, m.redis, nil, nil) }
func (m *migrateEnv) to(b *testing.B) distlock.Locker   { return m.etcd.ours(b, nil) }

// migrate returns a migrate Locker with opts over its own from and to
// Lockers (so its own clients), closed when b ends.
func (m *migrateEnv) migrate(b *testing.B, opts migrate.Options) *migrate.Locker {
	b.Helper()
	l, err := migrate.New(m.from(b), m.to(b), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return l
}

// lockerContender is any distlock.Locker as a contender: Acquire, and
// the lease's Release.
type lockerContender struct{ l distlock.Locker }

func (c lockerContender) acquire(ctx context.Context, key string) (func(context.Context) error, error) {
	ls, err := c.l.Acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	return ls.Release, nil
}

// cancellableContender runs c with ctx, a context that can end (and
// never does) in place of the caller's: redissingle then runs each
// request on a goroutine of its own (see B1's ours-ctx), as it does under
// every migrate Locker, whose calls can end when Close begins.
type cancellableContender struct {
	c   contender
	ctx context.Context
}

func newCancellable(b *testing.B, c contender) cancellableContender {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	return cancellableContender{c, ctx}
}

func (c cancellableContender) acquire(_ context.Context, key string) (func(context.Context) error, error) {
	release, err := c.c.acquire(c.ctx, key)
	if err != nil {
		return nil, err
	}
	return func(context.Context) error { return release(c.ctx) }, nil
}

// seqContender is PhaseBoth's protocol written out with no migrate code
// around it: Acquire on from, then on to; release to, then from. It has
// none of the Locker's work (the watcher goroutine, the bounded wait on
// the new backend and its context, the lifecycle), so both/seq is what
// that work costs and seq/to what the protocol itself costs over the new
// backend alone.
// With fromFirst it releases from first: the next holder can take from,
// and queue on to, while to's release is still on its way.
type seqContender struct {
	from, to  distlock.Locker
	fromFirst bool
}

func (c seqContender) acquire(ctx context.Context, key string) (func(context.Context) error, error) {
	a, err := c.from.Acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	z, err := c.to.Acquire(ctx, key)
	if err != nil {
		_ = a.Release(context.WithoutCancel(ctx))
		return nil, err
	}
	first, second := z, a
	if c.fromFirst {
		first, second = a, z
	}
	return func(ctx context.Context) error {
		err := first.Release(ctx)
		if e := second.Release(ctx); err == nil {
			err = e
		}
		return err
	}, nil
}

// shadowContender is a PhaseShadow Locker whose acquire-release pairs
// can wait, untimed, for the background mirror of each lease to finish
// (mirror acquired and released, or its acquisition given up), so that
// one pair's mirror does not run into the next pair's timing nor
// another implementation's.
type shadowContender struct {
	l        *migrate.Locker
	finished chan struct{} // one per mirror that has made its last call
}

func newShadowContender(b *testing.B, m *migrateEnv) *shadowContender {
	b.Helper()
	c := &shadowContender{finished: make(chan struct{}, 1024)}
	c.l = m.migrate(b, migrate.Options{Phase: migrate.PhaseShadow, OnShadow: func(ev migrate.ShadowEvent) {
		if ev.Op == migrate.ShadowRelease || ev.Op == migrate.ShadowAcquire && ev.Err != nil {
			c.finished <- struct{}{}
		}
	}})
	return c
}

// settle waits for one mirror to finish.
func (c *shadowContender) settle(b *testing.B) {
	select {
	case <-c.finished:
	case <-time.After(10 * time.Second):
		b.Fatalf("a shadow mirror has not finished after 10 s: %+v", c.l.ShadowStats())
	}
}
