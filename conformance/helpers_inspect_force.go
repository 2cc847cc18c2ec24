package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/distlock/distlock"
)

// force: a holder takes prefix+"a" and prefix+"b" under automatic
// extension while a third client waits for "a"; the observer
// force-releases "a". The evicted lease's Done must fire within
// forceLossBound, the waiting client get the key (with a higher fence
// where fences are ordered), the evicted lease's Extend and Release
// return ErrLeaseLost, Inspect show the new holder (never the evicted
// one), and List show both held keys.
func (in *inspection) force(a, c distlock.Locker, prefix string) {
	const part = "ForceRelease"
	e, ka, kb := in.e, prefix+"a", prefix+"b"
	old, err := in.acquire(a, ka, false)
	if err != nil {
		in.fail("%s: acquiring a free key: %v", part, err)
		return
	}
	defer func() { _ = old.Release(withTimeout(e, inspectCallTimeout)) }() // if the checks stop early
	kept, err := in.acquire(a, kb, false)
	if err != nil {
		in.fail("%s: acquiring a second free key: %v", part, err)
		return
	}
	defer func() { _ = kept.Release(withTimeout(e, inspectCallTimeout)) }()
	before, ok := in.inspect(part, ka)
	if !ok {
		return
	}
	in.checkHolder(part+": held key", before, old.Token(), old.Fence())

	// The third client waits for the key, and a watcher stamps the
	// evicted lease's Done; both are joined before force returns.
	type result struct {
		ls  distlock.Lease
		err error
		at  time.Time
	}
	waiting := make(chan result, 1)
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		select { // a grant the checks stopped before reading
		case r := <-waiting:
			if r.err == nil {
				_ = r.ls.Release(withTimeout(e, inspectCallTimeout))
			}
		default:
		}
	}()
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(e.ctx, 4*e.ttl)
		defer cancel()
		ls, err := c.Acquire(ctx, ka, distlock.WithTTL(e.ttl), distlock.WithAutoExtend(0), helperRetry())
		waiting <- result{ls, err, time.Now()}
	})
	doneAt := make(chan time.Time, 1)
	stopWatch := make(chan struct{})
	defer close(stopWatch) // before wg.Wait above: deferred calls run last-in first-out
	wg.Go(func() {
		select {
		case <-old.Done():
			doneAt <- time.Now()
		case <-stopWatch:
		}
	})
	sleepCtx(e.ctx, e.ttl/10) // the third client is waiting
	select {
	case r := <-waiting:
		if r.err == nil {
			_ = r.ls.Release(withTimeout(e, inspectCallTimeout))
		}
		in.fail("%s: the third client's Acquire returned (error: %v) while the key was held", part, r.err)
		return
	default:
	}

	forced := time.Now()
	held, err := in.forceRelease(ka)
	if err != nil || !held {
		in.fail("%s: ForceRelease of a held key = %v, %v; want true, nil", part, held, err)
		return
	}
	in.metric("force_call_ms", time.Since(forced))
	bound := forceLossBound(e, in.tr)
	var lossNote string
	select {
	case at := <-doneAt:
		took := at.Sub(forced)
		in.metric("force_done_ms", took)
		lossNote = fmt.Sprintf("the evicted lease's Done fired %s after ForceRelease (bound %v)", fmtDur(took), bound)
		if took > bound {
			in.fail("%s: %s", part, lossNote)
		}
		if !errors.Is(old.Err(), distlock.ErrLeaseLost) {
			in.fail("%s: the evicted lease ended with %v, want an error matching ErrLeaseLost", part, old.Err())
		}
	case <-time.After(time.Until(forced.Add(bound))):
		in.fail("%s: the evicted lease's Done did not fire within %v of ForceRelease", part, bound)
	}

	r := <-waiting
	if r.err != nil {
		in.fail("%s: the waiting client did not get the force-released key within %v: %v", part, 4*e.ttl, r.err)
		return
	}
	defer func() { _ = r.ls.Release(withTimeout(e, inspectCallTimeout)) }()
	in.metric("force_next_ms", r.at.Sub(forced))
	fenceNote := ""
	if e.g.Fence != distlock.FenceNone {
		fenceNote = fmt.Sprintf(", fence %d > the evicted %d", r.ls.Fence(), old.Fence())
		if r.ls.Fence() <= old.Fence() {
			in.fail("%s: FENCE: the next holder's fence %d is not above the evicted holder's %d", part, r.ls.Fence(), old.Fence())
		}
	}
	if err := old.Extend(withTimeout(e, inspectCallTimeout), e.ttl); !errors.Is(err, distlock.ErrLeaseLost) {
		in.fail("%s: the evicted lease's Extend returned %v, want an error matching ErrLeaseLost", part, err)
	}
	if err := old.Release(withTimeout(e, inspectCallTimeout)); !errors.Is(err, distlock.ErrLeaseLost) {
		in.fail("%s: the evicted lease's Release returned %v, want an error matching ErrLeaseLost", part, err)
	}
	after, ok := in.inspect(part, ka)
	if !ok {
		return
	}
	in.checkHolder(part+": the next holder", after, r.ls.Token(), r.ls.Fence())
	if after.Held && after.Holder == before.Holder {
		in.fail("%s: Inspect still shows the evicted holder %q after the next holder acquired", part, after.Holder)
	}
	in.checkList(part, prefix, map[string]distlock.LockInfo{ka: after, kb: in.heldInfo(part, kb, kept)})
	in.note("ForceRelease", "ForceRelease: %s; the waiting client acquired %s after it%s; the evicted lease's Extend and Release returned ErrLeaseLost; Inspect and List show the next holder",
		lossNote, fmtDur(r.at.Sub(forced)), fenceNote)
}

// heldInfo inspects key, which ls holds, and judges the answer.
func (in *inspection) heldInfo(part, key string, ls distlock.Lease) distlock.LockInfo {
	info, ok := in.inspect(part, key)
	if ok {
		in.checkHolder(part+": the key held alongside", info, ls.Token(), ls.Fence())
	}
	return info
}

// checkList: List lists each key of want held, by the holder Inspect
// reported, and (where it lists names) nothing else under prefix, in key
// order. Where the server keeps no names, each key is looked up by its
// id.
func (in *inspection) checkList(part, prefix string, want map[string]distlock.LockInfo) {
	part += ": List"
	if in.tr.idsOnly {
		for key, w := range want {
			id := in.listName(key)
			if id == "" {
				in.note("ForceRelease", "List not checked: the Locker has no KeyID to name its ids")
				return
			}
			got, _ := in.list(part, id)
			found := false
			for _, info := range got {
				if info.Key == id {
					found = true
					in.checkListed(part, info, w)
				}
			}
			if !found {
				in.fail("%s(%s) does not list the held key %s", part, id, in.name(key))
			}
		}
		return
	}
	got, ok := in.list(part, prefix)
	if !ok {
		return
	}
	var names []string
	for _, info := range got {
		names = append(names, info.Key)
	}
	if len(got) != len(want) || !slices.IsSorted(names) {
		in.fail("%s(%s) = %q, want the %d held keys in key order", part, in.name(prefix), names, len(want))
		return
	}
	for _, info := range got {
		w, ok := want[info.Key]
		if !ok {
			in.fail("%s(%s) lists %s, which H4 did not take", part, in.name(prefix), in.name(info.Key))
			continue
		}
		in.checkListed(part, info, w)
	}
}

// checkListed: a listed entry agrees with Inspect's answer for its key.
func (in *inspection) checkListed(part string, got, want distlock.LockInfo) {
	if !got.Held || got.Holder != want.Holder || got.Fence != want.Fence {
		in.fail("%s: %s listed %s, Inspect reported %s", part, in.name(got.Key), fmtInfo(got), fmtInfo(want))
	}
}
