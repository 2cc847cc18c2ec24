package pgadvisory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/pgadvisory"
	"github.com/distlock/distlock/testbed"
)

// lostWithin bounds the time from ForceRelease to the evicted lease's
// Done: the lease's monitor reads its connection and sees the server
// close it (TestInspect/ForceRelease logs the time it takes).
const lostWithin = 2 * time.Second

// TestInspect runs the Inspector contract and the Postgres-specific
// inspection scenarios on one server, with prepared transactions enabled
// for the leak.
func TestInspect(t *testing.T) {
	s := startPostgres(t, "-c", "max_prepared_transactions=4")
	t.Run("Contract", s.testInspectContract)
	t.Run("Waiters", s.testInspectWaiters)
	t.Run("ForceRelease", s.testForceRelease)
	t.Run("ForceReleaseSession", s.testForceReleaseSession)
	t.Run("ForceSparesReusedSession", s.testForceSparesReusedSession)
	t.Run("PreparedGidQuoting", s.testPreparedGidQuoting)
	t.Run("List", s.testListIDs)
	t.Run("PreparedLeak", s.testPreparedLeak)
	t.Run("Privilege", s.testForcePrivilege)
	t.Run("Bounded", s.testInspectBounded)
}

// testInspectContract runs the Inspector contract on s: a evicted by b's
// ForceRelease loses its session, so its Done fires within lostWithin;
// Holder is the session's pid, not the token's id; the server keeps no
// fence, label, TTL or key name per lock (List lists ids), and queues
// waiters.
func (s *server) testInspectContract(t *testing.T) {
	url := fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable&connect_timeout=2", testbed.PostgresUser, s.node.HostAddr(), testbed.PostgresDB)
	locker := func() *pgadvisory.Locker {
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		l, err := pgadvisory.New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	locktest.Inspector(t, locker(), locker(), locker(), locktest.InspectTraits{
		Queues:         true,
		IDsOnly:        true,
		MonotonicFence: true,
		LostWithin:     lostWithin,
	})
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// pidHolder is LockInfo.Holder for backend pid.
func pidHolder(pid int32) string { return "pid:" + strconv.Itoa(int(pid)) }

// waitAcquire starts a blocking Acquire of key on l and returns its
// outcome's channel.
func waitAcquire(ctx context.Context, l distlock.Locker, key string) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		ls, err := l.Acquire(ctx, key, distlock.WithTTL(time.Minute))
		ch <- acquired{ls, err}
	}()
	return ch
}

type acquired struct {
	ls  distlock.Lease
	err error
}

// testInspectWaiters: Waiters and Holder are what pg_locks shows: two
// blocked Acquire calls, the holding backend's pid.
func (s *server) testInspectWaiters(t *testing.T) {
	a, b := s.locker(t, "waiters-a", nil), s.locker(t, "waiters-b", nil)
	key := uniqueKey(t)
	ls := mustAcquire(t, a, key, distlock.WithTTL(time.Minute))
	ctx, cancel := context.WithCancel(ctx10(t))
	w1, w2 := waitAcquire(ctx, b, key), waitAcquire(ctx, b, key)
	eventually(t, 10*time.Second, "two blocked Acquire calls not counted", func() bool {
		return locktest.MustInspect(t, b, key).Waiters == 2
	})
	held, waiting := s.holders(t, a.KeyID(key))
	info := locktest.MustInspect(t, b, key)
	if len(held) != 1 || len(waiting) != 2 || info.Holder != pidHolder(held[0]) || !info.Held || info.Fence != 0 || info.TTL != 0 || info.Label != "" {
		t.Fatalf("Inspect %+v; pg_locks: held by %v, waited for by %v", info, held, waiting)
	}
	cancel()
	for _, w := range []<-chan acquired{w1, w2} {
		wantErr(t, (<-w).err, distlock.ErrNotAcquired)
	}
	mustRelease(t, ls)
	// A cancelled waiter's session may be granted the lock while it closes.
	eventually(t, 10*time.Second, "released key with no waiter still reported held", func() bool {
		info := locktest.MustInspect(t, b, key)
		return !info.Held && info.Waiters == 0 && info.Holder == ""
	})
}

// testForceRelease: the holder's session is terminated, its lease's Done
// fires within lostWithin, the queued waiter is granted with a higher
// fence, and the evicted lease can neither extend nor release it. In
// transaction mode too.
func (s *server) testForceRelease(t *testing.T) {
	for _, mode := range []pgadvisory.Mode{pgadvisory.ModeSession, pgadvisory.ModeTransaction} {
		t.Run(mode.String(), func(t *testing.T) {
			opts := &pgadvisory.Options{Mode: mode}
			a, b, op := s.locker(t, "force-a", opts), s.locker(t, "force-b", opts), s.locker(t, "force-op", nil)
			key := uniqueKey(t)
			old := mustAcquire(t, a, key, distlock.WithTTL(time.Minute))
			oldPID := s.holderPID(t, key)
			w := waitAcquire(ctx10(t), b, key)
			eventually(t, 10*time.Second, "waiter not queued", func() bool { return locktest.MustInspect(t, op, key).Waiters == 1 })
			start := time.Now()
			held, err := distlock.ForceRelease(ctx10(t), op, key)
			if err != nil || !held {
				t.Fatalf("ForceRelease = %v, %v; want true, nil", held, err)
			}
			select {
			case <-old.Done():
				t.Logf("evicted lease's Done fired %v after ForceRelease began", time.Since(start).Round(time.Millisecond))
			case <-time.After(lostWithin):
				t.Fatalf("evicted lease's Done did not fire within %v", lostWithin)
			}
			wantErr(t, old.Err(), distlock.ErrLeaseLost)
			next := <-w
			if next.err != nil {
				t.Fatalf("waiter after ForceRelease: %v", next.err)
			}
			if next.ls.Fence() <= old.Fence() {
				t.Fatalf("waiter's fence %d, want > evicted holder's %d", next.ls.Fence(), old.Fence())
			}
			wantErr(t, old.Extend(ctx10(t), time.Minute), distlock.ErrLeaseLost)
			wantErr(t, old.Release(ctx10(t)), distlock.ErrLeaseLost)
			info := locktest.MustInspect(t, op, key)
			if newPID := s.holderPID(t, key); !info.Held || info.Holder != pidHolder(newPID) || newPID == oldPID {
				t.Fatalf("after eviction: %+v, holder pid %d (evicted %d)", info, newPID, oldPID)
			}
			mustRelease(t, next.ls)
			if held, err := distlock.ForceRelease(ctx10(t), op, key); err != nil || held {
				t.Fatalf("ForceRelease of a free key = %v, %v; want false, nil", held, err)
			}
		})
	}
}

// testForceReleaseSession: a session holding two keys (an application's
// own, taken with KeyIDSQL) loses both when one is force-released, and
// the session itself.
func (s *server) testForceReleaseSession(t *testing.T) {
	op := s.locker(t, "session-op", nil)
	k1, k2 := uniqueKey(t)+"-1", uniqueKey(t)+"-2"
	app := s.admin(t)
	for _, k := range []string{k1, k2} {
		if _, err := app.Exec(ctx10(t), "SELECT pg_advisory_lock("+pgadvisory.KeyIDSQL+")", pgadvisory.DefaultNamespace, k); err != nil {
			t.Fatal(err)
		}
	}
	if !locktest.MustInspect(t, op, k2).Held {
		t.Fatal("the application's lock is not reported held")
	}
	if held, err := distlock.ForceRelease(ctx10(t), op, k1); err != nil || !held {
		t.Fatalf("ForceRelease = %v, %v; want true, nil", held, err)
	}
	if info := locktest.MustInspect(t, op, k2); info.Held {
		t.Fatalf("the terminated session's other lock is still held: %+v", info)
	}
	if err := app.Ping(ctx10(t)); err == nil {
		t.Fatal("the holder's session survived ForceRelease")
	}
}

// testListIDs: List names int8 advisory locks by decimal id, in bytewise
// order, paged, under a prefix of the id; a string key shows under its
// KeyID; InspectID and ForceReleaseID take the listed id.
func (s *server) testListIDs(t *testing.T) {
	l := s.locker(t, "list", nil)
	base := rand.Int64N(1e12) + 1e12 // 13 digits: the ids below share a prefix nothing else has
	prefix := strconv.FormatInt(base, 10)
	// Bytewise order differs from numeric order: prefix+"05" < prefix+"1" < prefix+"20".
	ids := []int64{base*100 + 5, base*10 + 1, base*100 + 20}
	var want []string
	for _, id := range []int64{ids[1], ids[2], ids[0]} {
		ls, err := l.TryAcquireID(ctx10(t), id)
		if err != nil {
			t.Fatal(err)
		}
		defer ls.Release(context.Background()) //nolint:errcheck // one is force-released below
	}
	for _, id := range ids {
		want = append(want, strconv.FormatInt(id, 10))
	}

	var got []string
	page := distlock.Page{Limit: 2}
	for i := 0; ; i++ {
		if i > 2 {
			t.Fatalf("List did not end: %v", got)
		}
		lst, err := distlock.List(ctx10(t), l, prefix, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range lst.Locks {
			if !info.Held || !strings.HasPrefix(info.Holder, "pid:") || info.Leak != "" {
				t.Fatalf("listed %+v", info)
			}
			got = append(got, info.Key)
		}
		if lst.Next == "" {
			break
		}
		page.Cursor = lst.Next
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("List(%q) = %v, want %v", prefix, got, want)
	}

	key := uniqueKey(t)
	ls := mustAcquire(t, l, key)
	defer mustRelease(t, ls)
	id := strconv.FormatInt(l.KeyID(key), 10)
	lst, err := distlock.List(ctx10(t), l, id, distlock.Page{})
	if err != nil || len(lst.Locks) != 1 || lst.Locks[0].Key != id || lst.Locks[0].Holder != pidHolder(s.holderPID(t, key)) {
		t.Fatalf("List(KeyID %s) = %+v, %v", id, lst, err)
	}

	if info, err := l.InspectID(ctx10(t), ids[1]); err != nil || !info.Held || info.Key != want[1] {
		t.Fatalf("InspectID = %+v, %v", info, err)
	}
	if held, err := l.ForceReleaseID(ctx10(t), ids[1]); err != nil || !held {
		t.Fatalf("ForceReleaseID = %v, %v", held, err)
	}
	if lst, err := distlock.List(ctx10(t), l, prefix, distlock.Page{Cursor: want[0]}); err != nil || len(lst.Locks) != 1 || lst.Locks[0].Key != want[2] || lst.Next != "" {
		t.Fatalf("List after %s with %s released = %+v, %v; want only %s", want[0], want[1], lst, err, want[2])
	}
}
