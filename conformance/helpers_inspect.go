package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/distlock/distlock"
)

// lapseBound is how long after a lease's validity ends (no extension)
// the observer may still see its key held: the server's expiry or the
// holder's own clean-up comes that late at most.
func lapseBound(e *env) time.Duration { return max(e.ttl/2, 500*time.Millisecond) }

// pushedLossBound is how soon after ForceRelease the evicted lease's Done
// must fire where the eviction itself tells it (inspectTraits.pushedLoss);
// elsewhere it fires at the watchdog's next extension or at the end of
// its validity, at most a TTL later (forceLossBound).
func pushedLossBound(e *env) time.Duration { return max(e.ttl/2, 500*time.Millisecond) }

// forceLossBound is how soon after ForceRelease the evicted lease's Done
// must fire on a backend with tr.
func forceLossBound(e *env, tr inspectTraits) time.Duration {
	if tr.pushedLoss {
		return pushedLossBound(e)
	}
	return e.ttl + lnTolerance(e.ttl)
}

// h4 checks what distlock.Inspect, List and ForceRelease report against
// what the scenario knows to be true, through an observer client of its
// own, in parts that run at once on keys of their own: a held key and its
// release; a lease left to run out; where worker processes can be, a
// holder SIGKILLed; a holder evicted by ForceRelease while a third client
// waits. See docs/conformance.md, "Helper scenarios".
func h4(e *env) observation {
	in := &inspection{e: e, obs: e.locker(helperClient), notes: map[string][]string{}, failed: map[string]bool{}, metrics: map[string]float64{}}
	tr, known := inspectTraitsOf(e.g.Backend)
	in.tr = tr
	if known {
		in.note("judged", "judged as %s documents: %v", e.g.Backend, tr)
	} else {
		in.note("judged", "backend %q unknown to H4: %v", e.g.Backend, tr)
	}
	if _, err := distlock.Inspect(withTimeout(e, inspectCallTimeout), in.obs, e.key); errors.Is(err, distlock.ErrNotSupported) {
		return observation{inconclusive: true, detail: "the Locker implements no distlock.Inspector: " + err.Error()}
	}
	p := e.key + "/"
	keys := []string{p + "release", p + "lapse", p + "force/a", p + "force/b"}
	holder, lapser, evicted, next := e.locker(helperClient), e.locker(helperClient), e.locker(helperClient), e.locker(helperClient)
	var worker *process
	if e.h.URL != nil && e.g.CrossProcess {
		worker = e.process(helperClient)
		keys = append(keys, p+"crash")
	} else {
		in.note("crash", "crash: n/a (no worker processes)")
	}
	var wg sync.WaitGroup
	wg.Go(func() { in.release(holder, p+"release") })
	wg.Go(func() { in.lapse(lapser, p+"lapse") })
	wg.Go(func() { in.force(evicted, next, p+"force/") })
	if worker != nil {
		wg.Go(func() { in.crash(worker, p+"crash") })
	}
	wg.Wait()
	in.sweep(p, keys)

	notes := in.noteList()
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.problems) > 0 {
		return observation{detail: strings.Join(append(in.problems, notes...), "; "), metrics: in.metrics}
	}
	notes = append(notes, fmt.Sprintf("%d LockInfo values read, no leak reported", in.reads))
	return observation{held: true, detail: strings.Join(notes, "; "), metrics: in.metrics}
}

// acquire takes key on l under automatic extension (or without any
// extension if lapse), waiting at most 3 TTLs.
func (in *inspection) acquire(l distlock.Locker, key string, lapse bool) (distlock.Lease, error) {
	ext := distlock.WithAutoExtend(0)
	if lapse {
		ext = distlock.WithoutAutoExtend()
	}
	ctx, cancel := context.WithTimeout(in.e.ctx, 3*in.e.ttl)
	defer cancel()
	return l.Acquire(ctx, key, distlock.WithTTL(in.e.ttl), ext, helperRetry())
}

// release: a key nobody took is free (and ForceRelease says it was not
// held); held, it reports its holder; released, it is free at once.
func (in *inspection) release(l distlock.Locker, key string) {
	const part = "release"
	if info, ok := in.inspect(part, key); ok {
		in.checkFree(part+": a key never taken reported", info)
	}
	if held, err := in.forceRelease(key); err != nil || held {
		in.fail("%s: ForceRelease of a key never taken = %v, %v; want false, nil", part, held, err)
	}
	ls, err := in.acquire(l, key, false)
	if err != nil {
		in.fail("%s: acquiring a free key: %v", part, err)
		return
	}
	if info, ok := in.inspect(part, key); ok {
		in.checkHolder(part+": held key", info, ls.Token(), ls.Fence())
	}
	if err := ls.Release(withTimeout(in.e, inspectCallTimeout)); err != nil {
		in.fail("%s: Release: %v", part, err)
		return
	}
	if info, ok := in.inspect(part, key); ok {
		in.checkFree(part+": reported right after Release returned", info)
	}
	in.note("release", "release: a held key reported with its holder, free at once after Release")
}

// lapse: a lease with no extension is reported held until its validity
// ends, and free within lapseBound after; the observer can then take the
// key, so the key really is free. On a backend whose locks live as long
// as a session, the holder frees the key at the end of its validity; the
// session's own end is the crash part's.
func (in *inspection) lapse(l distlock.Locker, key string) {
	const part = "expiry"
	ls, err := in.acquire(l, key, true)
	if err != nil {
		in.fail("%s: acquiring a free key: %v", part, err)
		return
	}
	defer func() { _ = ls.Release(withTimeout(in.e, inspectCallTimeout)) }() // ErrLeaseLost: it ran out
	vu, bound := ls.ValidUntil(), lapseBound(in.e)
	polls := 0
	for {
		info, ok := in.inspect(part, key)
		ret := time.Now()
		if !ok {
			return
		}
		polls++
		if !info.Held {
			if ret.Before(vu) && ls.Err() == nil {
				in.fail("%s: reported %s %v before the holder's validity ended", part, fmtInfo(info), vu.Sub(ret).Round(time.Millisecond))
				return
			}
			in.checkFree(part+": after the lease ran out", info)
			in.metric("expiry_free_ms", ret.Sub(vu))
			who := ""
			if in.e.g.WaiterSessions {
				who = " (freed by its holder: its session lives on)"
			}
			in.note("expiry", "expiry: held until the lease ran out (%d reads), free %s its validity%s (bound %v)", polls, relDur(ret.Sub(vu)), who, bound)
			break
		}
		if polls == 1 {
			in.checkHolder(part+": held key", info, ls.Token(), ls.Fence())
		}
		if ret.After(vu.Add(bound)) {
			in.fail("%s: still reported %s %v after the lease's validity ended (bound %v)", part, fmtInfo(info), ret.Sub(vu).Round(time.Millisecond), bound)
			return
		}
		sleepCtx(in.e.ctx, in.e.ttl/20)
	}
	in.takeFree(part, key)
}

// takeFree: a key Inspect reported free can be taken at once.
func (in *inspection) takeFree(part, key string) {
	ctx, cancel := context.WithTimeout(in.e.ctx, inspectCallTimeout)
	defer cancel()
	ls, err := in.obs.TryAcquire(ctx, key, distlock.WithTTL(in.e.ttl))
	if err != nil {
		in.fail("%s: reported free, yet the observer's TryAcquire failed: %v", part, err)
		return
	}
	_ = ls.Release(ctx)
}

// crash: a worker process holding the key under automatic extension is
// SIGKILLed; the key is reported free within S07's bound (crashBound) and
// can then be taken.
func (in *inspection) crash(w *process, key string) {
	const part = "crash"
	g, err := w.Acquire(withTimeout(in.e, 3*in.e.ttl), key, acquireReq{TTL: in.e.ttl, AutoExtend: time.Hour, RetryMax: 20 * time.Millisecond})
	if err != nil {
		in.fail("%s: the worker could not acquire a free key: %v", part, err)
		return
	}
	if info, ok := in.inspect(part, key); ok {
		in.checkHolder(part+": key held by a worker process", info, g.Token, g.Fence)
	}
	killed := time.Now()
	w.Kill()
	bound := crashBound(in.e)
	for {
		info, ok := in.inspect(part, key)
		if !ok {
			return
		}
		took := time.Since(killed)
		if !info.Held {
			in.checkFree(part+": after the holder died", info)
			in.metric("crash_free_ms", took)
			in.note("crash", "crash: free %s after the holder's SIGKILL (bound %v)", fmtDur(took), bound)
			break
		}
		if took > bound {
			in.fail("%s: still reported %s %v after the holder's SIGKILL (bound %v)", part, fmtInfo(info), took.Round(time.Millisecond), bound)
			return
		}
		sleepCtx(in.e.ctx, in.e.ttl/20)
	}
	in.takeFree(part, key)
}

// sweep: once every part has ended, none of keys is reported held or
// leaked, and List under prefix lists nothing held.
func (in *inspection) sweep(prefix string, keys []string) {
	const part = "after the scenario"
	for _, k := range keys {
		if info, ok := in.inspect(part, k); ok {
			in.checkFree(part+": "+in.name(k)+" reported", info)
		}
	}
	if in.tr.idsOnly {
		return
	}
	listed, _ := in.list(part, prefix)
	for _, info := range listed {
		if info.Held {
			in.fail("%s: List(%s) lists %s %s", part, in.name(prefix), in.name(info.Key), fmtInfo(info))
		}
	}
}
