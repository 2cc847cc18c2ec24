package conformance

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/distlock/distlock"
)

func always(distlock.Guarantees, *Harness) expectation { return holds() }

// contend runs rounds sections per contender on e.key and returns how many
// acquisitions failed and the grants that violated AV (validity counted
// from before the request).
func (e *env) contend(cs []contender, rounds int, section time.Duration, req acquireReq) (failed int, avBad []string) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func(c contender) {
			defer wg.Done()
			for i := 0; i < rounds && e.ctx.Err() == nil; i++ {
				g, err := c.Acquire(e.ctx, e.key, req)
				if err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
					continue
				}
				if bad := avViolation(g, req); bad != "" {
					mu.Lock()
					avBad = append(avBad, fmt.Sprintf("client %d: %s", c.ID(), bad))
					mu.Unlock()
				}
				e.section(c, g, section)
				_ = c.Release(e.ctx)
			}
		}(c)
	}
	wg.Wait()
	return failed, avBad
}

// s01: healthy servers, 10 clients contend on one key.
func s01(e *env) observation {
	cs := make([]contender, 10)
	for i := range cs {
		cs[i] = e.local(fmt.Sprint("c", i))
	}
	failed, avBad := e.contend(cs, 4, 5*time.Millisecond, acquireReq{TTL: e.ttl, RetryMax: 20 * time.Millisecond})
	me, meDetail := e.checkME()
	fence, fenceDetail := e.checkFence()
	detail := fmt.Sprintf("%s; %s; %d acquisitions failed", meDetail, fenceDetail, failed)
	ok := me && fence && failed == 0 && len(avBad) == 0
	if len(avBad) > 0 {
		detail += "; AV: " + avBad[0]
	}
	return observation{held: ok, detail: detail}
}

// s02: the holder works 3 TTLs under automatic extension; others keep
// trying and must fail, and the holder must not be told it lost the lease.
func s02(e *env) observation {
	a, b := e.local("a"), e.local("b")
	g, err := a.Acquire(e.ctx, e.key, acquireReq{TTL: e.ttl, AutoExtend: 10 * e.ttl})
	if err != nil {
		e.t.Fatalf("acquire: %v", err)
	}
	stop := make(chan struct{})
	var stolen int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(e.ttl / 5):
			}
			if g2, err := b.Acquire(e.ctx, e.key, acquireReq{Try: true, TTL: e.ttl}); err == nil {
				stolen++
				e.section(b, g2, time.Millisecond)
				_ = b.Release(e.ctx)
			}
		}
	}()
	e.section(a, g, 3*e.ttl)
	close(stop)
	wg.Wait()
	lost, _ := a.Lost()
	_ = a.Release(e.ctx)
	me, detail := e.checkME()
	if lost {
		return brokeObs("false lost-lease notification under automatic extension; %s", detail)
	}
	if stolen > 0 {
		return brokeObs("another client acquired %d time(s) while the lease was extended; %s", stolen, detail)
	}
	return observation{held: me, detail: detail}
}

// s03: the holder stalls past its TTL, B acquires, A wakes and releases:
// A's release must fail and leave B's lease alone.
func s03(e *env) observation {
	a, b, c := e.local("a"), e.local("b"), e.local("c")
	if _, err := a.Acquire(e.ctx, e.key, acquireReq{TTL: e.ttl}); err != nil {
		e.t.Fatalf("acquire a: %v", err)
	}
	if _, err := b.Acquire(e.ctx, e.key, acquireReq{TTL: 5 * e.ttl, RetryMax: 20 * time.Millisecond}); err != nil {
		e.t.Fatalf("acquire b: %v", err)
	}
	rerr := a.Release(e.ctx)
	_, cerr := c.Acquire(e.ctx, e.key, acquireReq{Try: true, TTL: e.ttl})
	if cerr == nil {
		_ = c.Release(e.ctx)
	}
	_ = b.Release(e.ctx)
	switch {
	case cerr == nil:
		return brokeObs("A's stale release freed B's key: C acquired it (release returned %v)", rerr)
	case !errors.Is(rerr, distlock.ErrLeaseLost):
		return brokeObs("A's stale release returned %v, want ErrLeaseLost", rerr)
	}
	return heldObs("stale release refused (%v); B kept the key", rerr)
}

// s04: extending after expiry (B acquired and released meanwhile) must
// fail and must not re-create the key.
func s04(e *env) observation {
	a, b, c := e.local("a"), e.local("b"), e.local("c")
	if _, err := a.Acquire(e.ctx, e.key, acquireReq{TTL: e.ttl}); err != nil {
		e.t.Fatalf("acquire a: %v", err)
	}
	gb, err := b.Acquire(e.ctx, e.key, acquireReq{TTL: e.ttl, RetryMax: 20 * time.Millisecond})
	if err != nil {
		e.t.Fatalf("acquire b: %v", err)
	}
	e.section(b, gb, time.Millisecond)
	_ = b.Release(e.ctx)
	xerr := a.Extend(e.ctx, 5*e.ttl)
	_, cerr := c.Acquire(e.ctx, e.key, acquireReq{Try: true, TTL: e.ttl})
	if cerr == nil {
		_ = c.Release(e.ctx)
	}
	_ = a.Release(e.ctx)
	switch {
	case xerr == nil:
		return brokeObs("extend after expiry succeeded")
	case !errors.Is(xerr, distlock.ErrLeaseLost):
		return brokeObs("extend after expiry returned %v, want ErrLeaseLost", xerr)
	case cerr != nil:
		return brokeObs("extend after expiry re-acquired the key: C could not take it (%v)", cerr)
	}
	return heldObs("extend after expiry refused (%v) without re-acquiring", xerr)
}

// s05: a release retried after the same client re-acquired must not free
// the new lease.
func s05(e *env) observation {
	l, err := e.h.NewLocker(e.ctx, "a")
	if err != nil {
		e.t.Fatal(err)
	}
	defer l.Close()
	c := e.local("c")
	old, err := l.TryAcquire(e.ctx, e.key, distlock.WithTTL(e.ttl))
	if err != nil {
		e.t.Fatalf("acquire: %v", err)
	}
	if err := old.Release(e.ctx); err != nil {
		e.t.Fatalf("release: %v", err)
	}
	cur, err := l.TryAcquire(e.ctx, e.key, distlock.WithTTL(5*e.ttl))
	if err != nil {
		e.t.Fatalf("re-acquire: %v", err)
	}
	defer cur.Release(e.ctx)
	_ = old.Release(e.ctx)           // the retried release
	xerr := old.Extend(e.ctx, e.ttl) // and a retried extension
	_, cerr := c.Acquire(e.ctx, e.key, acquireReq{Try: true, TTL: e.ttl})
	if cerr == nil {
		_ = c.Release(e.ctx)
		return brokeObs("a retried release of the old lease freed the new one")
	}
	if xerr == nil {
		return brokeObs("a retried extension of the old lease succeeded")
	}
	if cur.Err() != nil {
		return brokeObs("the new lease was disturbed: %v", cur.Err())
	}
	if e.h.Revoke == nil {
		return heldObs("retried release and extension of the old lease left the new lease alone")
	}
	_ = cur.Release(e.ctx)
	if bad := staleCallsAfterRevoke(e, l); bad != "" {
		return brokeObs("%s", bad)
	}
	return heldObs("retried release and extension of the old lease left the new lease alone; so did a revoked holder's extension and release")
}

// staleCallsAfterRevoke: the holder's lock is deleted behind its back and
// B takes the key; then the holder extends and releases. Where the backend
// does not tell the holder (Redis), its lease still looks valid, so both
// calls reach the servers, whose compare-and-extend and compare-and-delete
// must leave B's lock alone. It returns what went wrong, or "".
func staleCallsAfterRevoke(e *env, l distlock.Locker) string {
	key := e.key + "/revoked"
	a, err := l.TryAcquire(e.ctx, key, distlock.WithTTL(5*e.ttl))
	if err != nil {
		e.t.Fatalf("acquire before the revocation: %v", err)
	}
	if err := e.h.Revoke(e.ctx, key); err != nil {
		e.t.Fatalf("revoke: %v", err)
	}
	lb, err := e.h.NewLocker(e.ctx, "b")
	if err != nil {
		e.t.Fatal(err)
	}
	defer lb.Close()
	b, err := lb.Acquire(withTimeout(e, 3*e.ttl), key, distlock.WithTTL(5*e.ttl))
	if err != nil {
		return fmt.Sprintf("DF: nobody acquired after the revocation: %v", err)
	}
	defer b.Release(e.ctx)
	xerr := a.Extend(e.ctx, 5*e.ttl)
	if errors.Is(xerr, distlock.ErrLeaseLost) && a.ValidUntil().After(time.Now()) {
		return fmt.Sprintf("the revoked holder's extension failed (%v) but its lease still claims exclusion for %v while another client holds the key",
			xerr, time.Until(a.ValidUntil()).Round(time.Millisecond))
	}
	rerr := a.Release(e.ctx)
	c := e.local("c")
	_, cerr := c.Acquire(e.ctx, key, acquireReq{Try: true, TTL: e.ttl})
	switch {
	case cerr == nil:
		_ = c.Release(e.ctx)
		return fmt.Sprintf("the revoked holder's release (%v) or extension (%v) freed the new holder's key", rerr, xerr)
	case xerr == nil:
		return "the revoked holder's extension succeeded while another client held the key"
	case !errors.Is(rerr, distlock.ErrLeaseLost):
		return fmt.Sprintf("the revoked holder's release returned %v, want ErrLeaseLost", rerr)
	case b.Err() != nil:
		return fmt.Sprintf("the new holder's lease was disturbed: %v", b.Err())
	}
	return ""
}

// s06: two holders on one Locker (one connection/session) exclude each other.
func s06(e *env) observation {
	l, err := e.h.NewLocker(e.ctx, "shared")
	if err != nil {
		e.t.Fatal(err)
	}
	defer l.Close()
	cs := []contender{newLocal(101, l, e.hist), newLocal(102, l, e.hist)}
	failed, _ := e.contend(cs, 6, 5*time.Millisecond, acquireReq{TTL: e.ttl, RetryMax: 20 * time.Millisecond})
	me, detail := e.checkME()
	return observation{held: me && failed == 0, detail: fmt.Sprintf("%s; %d acquisitions failed", detail, failed)}
}

// avViolation checks a grant's validity against what the client saw: it
// must not have passed already, nor reach further than one TTL from the
// request (for a single attempt, from its call; a blocking Acquire's last
// attempt starts at some unknown time before its return).
func avViolation(g grant, req acquireReq) string {
	from := g.Ret
	if req.Try {
		from = g.Call
	}
	vu := g.ValidUntil.UnixNano()
	switch {
	case vu <= g.Ret:
		return fmt.Sprintf("ValidUntil already passed at return (by %v)", time.Duration(g.Ret-vu))
	case vu > from+int64(req.TTL)+int64(time.Millisecond):
		return fmt.Sprintf("ValidUntil %v beyond TTL %v from the request", time.Duration(vu-from), req.TTL)
	}
	return ""
}
