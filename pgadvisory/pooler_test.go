package pgadvisory_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/pgadvisory"
	"github.com/distlock/distlock/testbed"
)

// bounced is a Postgres behind PgBouncer in transaction pooling mode.
type bounced struct {
	*server
	bouncer *testbed.PgBouncerNode
}

func startBounced(t *testing.T) *bounced {
	t.Helper()
	testbed.RequireDocker(t)
	pg, b := testbed.StartPostgresBehindPgBouncer(t, testbed.PostgresOptions{}, "transaction")
	return &bounced{server: &server{node: pg}, bouncer: b}
}

// pooledLocker opens a Locker through PgBouncer.
func (b *bounced) pooledLocker(t *testing.T, link string, opts *pgadvisory.Options) *pgadvisory.Locker {
	t.Helper()
	cfg, err := pgx.ParseConfig(b.bouncer.URL(link) + "&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	l, err := pgadvisory.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// TestSessionModeRefusesPooler: session locks through a transaction
// pooler are refused with a *PoolerError, and nothing is left locked.
func TestSessionModeRefusesPooler(t *testing.T) {
	b := startBounced(t)
	l := b.pooledLocker(t, "a", nil)
	key := uniqueKey(t)
	for _, acquire := range []func(context.Context, string, ...distlock.Option) (distlock.Lease, error){l.TryAcquire, l.Acquire} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := acquire(ctx, key)
		cancel()
		var pe *pgadvisory.PoolerError
		if !errors.As(err, &pe) {
			t.Fatalf("through PgBouncer: %v, want a *PoolerError", err)
		}
		wantErr(t, err, distlock.ErrInvalidArgument)
		t.Logf("%v", err)
	}
	if held, waiting := b.holders(t, l.KeyID(key)); len(held)+len(waiting) != 0 {
		t.Fatalf("a refused acquisition left %v %v", held, waiting)
	}
}

// TestTransactionModeThroughPgBouncer: leases held as open transactions
// exclude each other through PgBouncer's transaction pooling, hand over on
// commit, and expire by the server's idle-in-transaction timeout.
func TestTransactionModeThroughPgBouncer(t *testing.T) {
	b := startBounced(t)
	opts := &pgadvisory.Options{Mode: pgadvisory.ModeTransaction}
	key := uniqueKey(t)
	l := b.pooledLocker(t, "a", opts)
	if g := l.Guarantees(); g.Fence != distlock.FenceMonotonic {
		t.Fatalf("transaction mode promises %v fences", g.Fence)
	}

	// Mutual exclusion among 4 clients through the pooler.
	var mu sync.Mutex
	inside, maxInside, n := 0, 0, 0
	var last uint64
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		cl := b.pooledLocker(t, "c", opts)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				ls, err := cl.Acquire(ctx, key, distlock.WithTTL(5*time.Second))
				cancel()
				if err != nil {
					t.Errorf("Acquire: %v", err)
					return
				}
				mu.Lock()
				inside++
				maxInside = max(maxInside, inside)
				if ls.Fence() <= last {
					t.Errorf("fence %d after %d", ls.Fence(), last)
				}
				last = ls.Fence()
				n++
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
				mu.Lock()
				inside--
				mu.Unlock()
				if err := ls.Release(context.Background()); err != nil {
					t.Errorf("Release: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if maxInside != 1 || n != 20 {
		t.Fatalf("%d acquisitions, up to %d holders at once", n, maxInside)
	}
	if held, _ := b.holders(t, l.KeyID(key)); len(held) != 0 {
		t.Fatalf("still held after every release: %v", held)
	}

	// The TTL: a lease not extended ends with its transaction.
	ttl := time.Second
	ls := mustAcquire(t, l, key, distlock.WithTTL(ttl))
	_, err := b.pooledLocker(t, "d", opts).TryAcquire(context.Background(), key)
	wantErr(t, err, distlock.ErrNotAcquired)
	select {
	case <-ls.Done():
	case <-time.After(3 * ttl):
		t.Fatal("the transaction-mode lease did not expire")
	}
	next := mustAcquire(t, b.pooledLocker(t, "e", opts), key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Minute))
	time.Sleep(2 * ttl) // heartbeats keep the transaction alive through the pooler
	if err := next.Err(); err != nil {
		t.Fatalf("an extended transaction-mode lease was lost: %v", err)
	}
	mustRelease(t, next)
	wantErr(t, ls.Release(context.Background()), distlock.ErrLeaseLost)
}

// TestLockTxThroughPgBouncer: LockTx in the caller's own transactions
// through the pooler; the lock ends with the transaction.
func TestLockTxThroughPgBouncer(t *testing.T) {
	b := startBounced(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := b.pooledLocker(t, "a", nil)
	mustRelease(t, mustAcquireDirect(t, b.server, "fence-setup")) // creates the fence sequence
	connect := func() *pgx.Conn {
		c, err := pgx.Connect(ctx, b.bouncer.URL("tx"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		return c
	}
	c1, c2 := connect(), connect()
	key := uniqueKey(t)
	tx1, err := c1.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f1, err := l.LockTx(ctx, tx1, key)
	if err != nil {
		t.Fatalf("LockTx: %v", err)
	}
	tx2, err := c2.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.TryLockTx(ctx, tx2, key)
	wantErr(t, err, distlock.ErrNotAcquired)
	if err := tx1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	f2, err := l.TryLockTx(ctx, tx2, key)
	if err != nil {
		t.Fatalf("TryLockTx after the first transaction committed: %v", err)
	}
	if f2 <= f1 {
		t.Fatalf("fence %d after %d", f2, f1)
	}
	if err := tx2.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if held, _ := b.holders(t, l.KeyID(key)); len(held) != 0 {
		t.Fatalf("held after both transactions ended: %v", held)
	}
}

// mustAcquireDirect takes key on a direct connection to s.
func mustAcquireDirect(t *testing.T, s *server, key string) distlock.Lease {
	t.Helper()
	return mustAcquire(t, s.locker(t, "direct", nil), key)
}
