package pgadvisory_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/pgadvisory"
	"github.com/distlock/distlock/testbed"
)

// hostileServerArgs are server settings a DBA may choose that would end a
// silent client's session well within the default TTL: keepalive probes
// after 2 s of silence, 2 probes 1 s apart, and unacknowledged data given
// up after 3 s. A Locker must keep its exclusion promise whatever they are.
var hostileServerArgs = []string{
	"-c", "tcp_keepalives_idle=2", "-c", "tcp_keepalives_interval=1", "-c", "tcp_keepalives_count=2",
	"-c", "tcp_user_timeout=3000",
}

// partitionFault cuts the holder's link (and may start a request of the
// holder's lease); the func it returns waits for that request.
type partitionFault func(t *testing.T, s *server, link *testbed.PacketLink, ls distlock.Lease, key string) (wait func())

// TestPartitionedHolderKeepsExclusion: the holder's packets are dropped
// both ways (no RST, no FIN: the server's keepalive probes and
// retransmissions go unanswered) at the default TTL, with and without
// automatic extension, idle or with an Extend in flight, on a server with
// stock settings and on one with short TCP timeouts. Another client loops
// TryAcquire on a healthy link: whenever it is granted the key, the
// holder's claim (ValidUntil, or when Done fired if sooner) must be over.
// The server still frees the dead holder's lock, a few seconds after its
// TTL.
func TestPartitionedHolderKeepsExclusion(t *testing.T) {
	testbed.RequireDocker(t)
	servers := map[string][]string{"stock": nil, "hostile": hostileServerArgs}
	cases := []struct {
		server string
		name   string
		mode   pgadvisory.Mode
		opts   []distlock.Option
		fault  partitionFault
	}{
		{"stock", "idle", pgadvisory.ModeSession, nil, cutLink},
		{"stock", "autoextend", pgadvisory.ModeSession, []distlock.Option{distlock.WithAutoExtend(time.Hour)}, cutAfterHeartbeat},
		{"hostile", "idle", pgadvisory.ModeSession, nil, cutLink},
		{"hostile", "autoextend", pgadvisory.ModeSession, []distlock.Option{distlock.WithAutoExtend(time.Hour)}, cutAfterHeartbeat},
		{"hostile", "extend after cut", pgadvisory.ModeSession, nil, cutThenExtend},
		{"hostile", "extend reply in retransmission", pgadvisory.ModeSession, nil, cutDuringExtendReply},
		{"hostile", "transaction idle", pgadvisory.ModeTransaction, nil, cutLink},
	}
	started := map[string]*server{}
	for name, args := range servers {
		started[name] = startPostgres(t, args...)
	}
	// The cases run at once, each waiting out a TTL: in goroutines rather
	// than with t.Parallel, which -parallel (GOMAXPROCS) would batch.
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, tc := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(tc.server+"/"+tc.name, func(t *testing.T) {
				s := started[tc.server]
				client := tc.server + "-" + tc.name
				holder, link := s.packetLocker(t, client, &pgadvisory.Options{Mode: tc.mode})
				other := s.locker(t, "other-"+client, &pgadvisory.Options{Mode: tc.mode})
				key := uniqueKey(t)
				ls := mustAcquire(t, holder, key, tc.opts...)
				var doneAt atomic.Pointer[time.Time]
				go func() {
					<-ls.Done()
					now := time.Now()
					doneAt.Store(&now)
				}()
				wait := tc.fault(t, s, link, ls, key)
				defer wait()
				cut := time.Now()
				claim := func() time.Time {
					c := ls.ValidUntil()
					if d := doneAt.Load(); d != nil && d.Before(c) {
						c = *d
					}
					return c
				}
				grantedAfterClaim(t, other, key, cut, claim)
			})
		}()
	}
}

// grantedAfterClaim loops other's TryAcquire of key until it is granted,
// and fails t if, when it was, the holder's claim had not ended; or if it
// is not granted within the default TTL and 15 s of the cut.
func grantedAfterClaim(t *testing.T, other distlock.Locker, key string, cut time.Time, claim func() time.Time) {
	t.Helper()
	limit := cut.Add(distlock.DefaultTTL + 15*time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, err := other.TryAcquire(ctx, key)
		cancel()
		granted := time.Now()
		if err == nil {
			if c := claim(); c.After(granted) {
				t.Errorf("granted to the other client %v after the cut while the holder's lease claimed exclusion for %v more",
					granted.Sub(cut).Round(time.Millisecond), c.Sub(granted).Round(time.Millisecond))
			} else {
				t.Logf("granted to the other client %v after the cut, %v after the holder's claim ended",
					granted.Sub(cut).Round(time.Millisecond), granted.Sub(c).Round(time.Millisecond))
			}
			mustRelease(t, got)
			return
		}
		if !errors.Is(err, distlock.ErrNotAcquired) {
			t.Fatalf("TryAcquire on the healthy link: %v", err)
		}
		if granted.After(limit) {
			t.Fatalf("the server had not freed the cut-off holder's lock %v after the cut", granted.Sub(cut))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cutLink drops the holder's packets both ways.
func cutLink(t *testing.T, _ *server, link *testbed.PacketLink, _ distlock.Lease, _ string) func() {
	t.Helper()
	mustFault(t, link.Cut)
	return func() {}
}

// cutAfterHeartbeat waits until the watchdog's first heartbeat has moved
// the validity, then cuts the link: the server last heard from the holder
// at a heartbeat.
func cutAfterHeartbeat(t *testing.T, _ *server, link *testbed.PacketLink, ls distlock.Lease, _ string) func() {
	t.Helper()
	first := ls.ValidUntil()
	eventually(t, distlock.DefaultTTL, "no heartbeat moved the validity", func() bool { return ls.ValidUntil().After(first) })
	mustFault(t, link.Cut)
	return func() {}
}

// cutThenExtend cuts the link, then extends the lease: the heartbeat never
// reaches the server, and the Extend waits for its reply as long as its
// context allows.
func cutThenExtend(t *testing.T, _ *server, link *testbed.PacketLink, ls distlock.Lease, _ string) func() {
	t.Helper()
	mustFault(t, link.Cut)
	return extendInBackground(t, ls)
}

// cutDuringExtendReply drops the server's replies, extends the lease, and
// cuts the link once the server has run the heartbeat: its reply is
// unacknowledged data the server retransmits (the server's TCP user
// timeout, not keepalive, governs that connection then).
func cutDuringExtendReply(t *testing.T, s *server, link *testbed.PacketLink, ls distlock.Lease, key string) func() {
	t.Helper()
	pid := s.holderPID(t, key)
	before := queryStart(t, s, pid)
	mustFault(t, link.DropReplies)
	wait := extendInBackground(t, ls)
	eventually(t, 10*time.Second, "the server did not run the heartbeat", func() bool { return queryStart(t, s, pid).After(before) })
	time.Sleep(500 * time.Millisecond) // the server retransmits its reply
	mustFault(t, link.Cut)
	return wait
}

// extendInBackground extends ls by the default TTL with a context of 20 s;
// the func it returns waits for the Extend, which must fail.
func extendInBackground(t *testing.T, ls distlock.Lease) func() {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := ls.Extend(ctx, distlock.DefaultTTL); err == nil {
			t.Errorf("Extend over a cut link succeeded")
		}
	}()
	return wg.Wait
}

// TestBlackholedHolder: the holder is cut off; the server ends its idle
// session within the TTL, and the holder learns it lost the lease before
// another client gets the key.
func TestBlackholedHolder(t *testing.T) {
	s := startPostgres(t)
	l, other := s.locker(t, "a", nil), s.locker(t, "b", nil)
	key := uniqueKey(t)
	ttl := time.Second
	ls := mustAcquire(t, l, key, distlock.WithTTL(ttl), distlock.WithAutoExtend(time.Hour))
	cutHolder(t, s, "a", other, key, ls, ttl)
}

// cutHolder black-holes link, the holder's of key (held as ls under a TTL
// of ttl), and checks that other acquires key within ttl + 1 s (the
// server ends the holder's session at its idle timeout, the TTL), that
// the holder was told first, and that its Release then reports the loss.
func cutHolder(t *testing.T, s *server, link string, other *pgadvisory.Locker, key string, ls distlock.Lease, ttl time.Duration) {
	t.Helper()
	l := s.node.Link(link)
	cut := time.Now()
	l.Blackhole()
	defer l.Heal()
	ctx, cancel := context.WithTimeout(context.Background(), 5*ttl)
	defer cancel()
	next, err := other.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("nobody acquired after the holder was cut off: %v", err)
	}
	took := time.Since(cut)
	select {
	case <-ls.Done():
	default:
		t.Fatal("the other client acquired before the holder was told")
	}
	wantErr(t, ls.Err(), distlock.ErrLeaseLost)
	if took > ttl+time.Second {
		t.Fatalf("freed %v after the cut, TTL %v: the session's idle timeout was not the TTL", took, ttl)
	}
	t.Logf("freed %v after the cut", took)
	mustRelease(t, next)
	l.Heal()
	wantErr(t, ls.Release(context.Background()), distlock.ErrLeaseLost)
}

const defaultBound = pgadvisory.DefaultRequestTimeout

// TestCutServerCallsReturn: with the server's packets dropped both ways
// (no RST, no FIN) and context.Background(), every call returns within its
// bound, the request timeout (default, or configured): TryAcquire on a
// pooled connection and on a new one, Extend and Release of a held lease
// (default TTL) with ErrUnavailable; Close, with a TryAcquire or a
// blocking Acquire in flight, interrupts it (ErrClosed) at once. A call
// still running at 3x its bound is reported as hung.
func TestCutServerCallsReturn(t *testing.T) {
	s := startPostgres(t)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i, tc := range cutCalls() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(tc.name, func(t *testing.T) {
				l, link := s.packetLocker(t, "live"+string(rune('a'+i)), tc.opts)
				var start time.Time
				cut := func() {
					mustFault(t, link.Cut)
					start = time.Now()
				}
				err := returnsWithin(t, 3*tc.bound, link, func() error { return tc.run(t, l, cut) })
				took := time.Since(start)
				wantErr(t, err, tc.want...)
				t.Logf("returned %v after the cut: %v", took.Round(time.Millisecond), err)
			})
		}()
	}
}

// cutCall is a call TestCutServerCallsReturn makes over a cut link.
type cutCall struct {
	name string
	opts *pgadvisory.Options
	// run sets up on a healthy link, cuts it, and makes the call.
	run   func(t *testing.T, l *pgadvisory.Locker, cut func()) error
	want  []error
	bound time.Duration
}

// cutCalls are the calls of TestCutServerCallsReturn, with the errors
// they must return and their bounds.
func cutCalls() []cutCall {
	ctx := context.Background()
	return []cutCall{
		{"TryAcquire pooled", nil, func(t *testing.T, l *pgadvisory.Locker, cut func()) error {
			mustRelease(t, mustAcquire(t, l, uniqueKey(t)))
			cut()
			_, err := l.TryAcquire(ctx, uniqueKey(t))
			return err
		}, []error{distlock.ErrUnavailable}, defaultBound},
		{"TryAcquire connect", nil, func(t *testing.T, l *pgadvisory.Locker, cut func()) error {
			cut()
			_, err := l.TryAcquire(ctx, uniqueKey(t))
			return err
		}, []error{distlock.ErrUnavailable}, defaultBound},
		{"Extend", nil, func(t *testing.T, l *pgadvisory.Locker, cut func()) error {
			ls := mustAcquire(t, l, uniqueKey(t))
			t.Cleanup(func() { _ = ls.Release(ctx) })
			cut()
			err := ls.Extend(ctx, distlock.DefaultTTL)
			if ls.Err() == nil {
				t.Errorf("the lease is held after its heartbeat failed: %v", err)
			}
			return err
		}, []error{distlock.ErrUnavailable, distlock.ErrLeaseLost}, defaultBound},
		{"Release", nil, func(t *testing.T, l *pgadvisory.Locker, cut func()) error {
			ls := mustAcquire(t, l, uniqueKey(t))
			cut()
			return ls.Release(ctx)
		}, []error{distlock.ErrUnavailable}, defaultBound},
		{"Close during TryAcquire connect", nil, func(t *testing.T, l *pgadvisory.Locker, cut func()) error {
			cut()
			return closeDuring(t, l, func() error {
				_, err := l.TryAcquire(ctx, uniqueKey(t))
				return err
			})
		}, []error{distlock.ErrClosed}, closeBound},
		{"Close during TryAcquire pooled", nil, func(t *testing.T, l *pgadvisory.Locker, cut func()) error {
			mustRelease(t, mustAcquire(t, l, uniqueKey(t)))
			cut()
			return closeDuring(t, l, func() error {
				_, err := l.TryAcquire(ctx, uniqueKey(t))
				return err
			})
		}, []error{distlock.ErrClosed}, closeBound},
		{"Close during Acquire connect", nil, func(t *testing.T, l *pgadvisory.Locker, cut func()) error {
			cut()
			return closeDuring(t, l, func() error {
				_, err := l.Acquire(ctx, uniqueKey(t))
				return err
			})
		}, []error{distlock.ErrClosed}, closeBound},
		{"TryAcquire pooled, configured timeout", &pgadvisory.Options{RequestTimeout: time.Second}, func(t *testing.T, l *pgadvisory.Locker, cut func()) error {
			mustRelease(t, mustAcquire(t, l, uniqueKey(t)))
			cut()
			_, err := l.TryAcquire(ctx, uniqueKey(t))
			return err
		}, []error{distlock.ErrUnavailable}, time.Second},
	}
}

// returnsWithin runs call and returns its error. If call has not returned
// within limit, it fails t as hung, heals link so that call can end, and
// waits for it.
func returnsWithin(t *testing.T, limit time.Duration, link *testbed.PacketLink, call func() error) error {
	t.Helper()
	res := make(chan error, 1)
	go func() { res <- call() }()
	select {
	case err := <-res:
		return err
	case <-time.After(limit):
	}
	t.Errorf("hung: the call has not returned %v after it started", limit)
	mustFault(t, link.Heal)
	select {
	case err := <-res:
		return err
	case <-time.After(3 * time.Minute):
		t.Fatal("the call has not returned 3 minutes after the link was healed")
		return errors.New("hung")
	}
}
