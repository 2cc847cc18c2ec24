package conformance

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/distlock/distlock"
)

// s34: hostile keys (see hostileKeys). Client x holds a control lease on
// a normal key throughout; after every call on a hostile key the control
// lease must still be held and extend, and a probe on a normal key must
// acquire with a higher fence than the previous probe.
//
//	A: x TryAcquires every key in turn, holding all it gets: each must be
//	   granted (it is not held; the keys before it that x holds must not
//	   block it) or refused at once with ErrInvalidArgument.
//	A': y blocks on every key for a short while, a few keys at a time: a
//	   key x holds must end with ErrNotAcquired (exclusion across
//	   clients), a refused key must be refused by y too.
//	B: for each granted key in table order, x extends and releases it,
//	   and y TryAcquires it at once, while x still holds the keys after it
//	   and y the keys before: no other key may block it.
//	C: y releases everything.
//
// Every call is bounded: a panic or a call that does not return after its
// context ended is a failure, as is any error other than those above (in
// particular ErrUnavailable for a key the backend cannot store). The
// report lists the keys the backend refused.
func s34(e *env) observation {
	r := &keyRun{e: e, hold: 30 * e.ttl, bound: max(5*e.ttl, 5*time.Second), atOnce: max(e.ttl, time.Second)}
	var err error
	if r.x, err = e.h.NewLocker(e.ctx, "x"); err != nil {
		e.t.Fatalf("NewLocker(x): %v", err)
	}
	defer r.x.Close()
	if r.y, err = e.h.NewLocker(e.ctx, "y"); err != nil {
		e.t.Fatalf("NewLocker(y): %v", err)
	}
	defer r.y.Close()
	e.nextID++
	r.xID = e.nextID
	e.nextID++
	r.yID = e.nextID
	r.probe = e.local("probe")
	var res callResult
	if r.control, res = r.acquire(r.x, r.xID, e.key+"-control", true, r.bound); res.err != nil {
		e.t.Fatalf("control lease: %s", res)
	}
	r.checkProbe("the control acquisition")

	keys := hostileKeys()
	xs := make([]distlock.Lease, len(keys)) // x's lease per key (nil: refused or failed)
	refused := make([]bool, len(keys))
	for i, k := range keys { // A
		ls, res := r.acquire(r.x, r.xID, k.key, true, r.bound)
		switch {
		case res.err == nil:
			xs[i] = ls
		case res.refusal() && res.took <= r.atOnce:
			refused[i] = true
			r.refused = append(r.refused, k.name)
		case res.refusal():
			r.fail("%s: x's TryAcquire refused it only after %v", k.name, res.took.Round(time.Millisecond))
		case res.notAcquired():
			r.fail("%s: x's TryAcquire found it held (by x's earlier keys?): %s", k.name, res)
		default:
			r.fail("%s: x's TryAcquire %s", k.name, res)
		}
		r.checkControl(fmt.Sprintf("x's TryAcquire of %s", k.name))
		r.checkProbe(fmt.Sprintf("x's TryAcquire of %s", k.name))
	}

	var wg sync.WaitGroup // A'
	wait := max(e.ttl/2, 300*time.Millisecond)
	slots := make(chan struct{}, 4) // a few at a time: the scenario is not a load test
	for i, k := range keys {
		wg.Add(1)
		slots <- struct{}{}
		go func() { // owned: bounded by boundedCall, joined below
			defer func() { <-slots; wg.Done() }()
			ls, res := r.acquire(r.y, r.yID, k.key, false, wait)
			switch {
			case ls != nil:
				_ = r.release(ls, r.yID)
				if xs[i] != nil {
					r.fail("%s: y acquired it while x held it", k.name)
				}
			case refused[i] && !res.refusal():
				r.fail("%s: x's TryAcquire refused it, y's Acquire %s", k.name, res)
			case xs[i] != nil && !res.waitEnded():
				r.fail("%s: y's Acquire of a key x holds %s, want ErrNotAcquired", k.name, res)
			}
		}()
	}
	wg.Wait()
	r.checkControl("y's blocking Acquires")

	ys := make([]distlock.Lease, len(keys))
	for i, k := range keys { // B
		if xs[i] == nil {
			continue
		}
		x := boundedCall(e.ctx, r.bound, func(ctx context.Context) error { return xs[i].Extend(ctx, r.hold) })
		if x.err != nil {
			r.fail("%s: x's Extend %s", k.name, x)
		}
		r.checkControl(fmt.Sprintf("x's Extend of %s", k.name))
		if rel := r.release(xs[i], r.xID); rel.err != nil {
			r.fail("%s: x's Release %s", k.name, rel)
		}
		r.checkControl(fmt.Sprintf("x's Release of %s", k.name))
		ls, res := r.acquire(r.y, r.yID, k.key, true, r.bound)
		switch {
		case ls != nil:
			ys[i] = ls
			r.taken = append(r.taken, k.name)
		case res.notAcquired():
			r.fail("%s: y could not take it after x released it: blocked by another key x or y holds (%s)", k.name, res)
		default:
			r.fail("%s: y's TryAcquire after x released it %s", k.name, res)
		}
		r.checkControl(fmt.Sprintf("y's TryAcquire of %s", k.name))
		r.checkProbe(fmt.Sprintf("x's Extend and Release and y's TryAcquire of %s", k.name))
	}
	for i, k := range keys { // C
		if ys[i] != nil {
			if rel := r.release(ys[i], r.yID); rel.err != nil {
				r.fail("%s: y's Release %s", k.name, rel)
			}
			r.checkControl(fmt.Sprintf("y's Release of %s", k.name))
		}
	}
	r.checkProbe("y's Releases")
	if rel := r.release(r.control, r.xID); rel.err != nil && !r.controlBroken {
		r.fail("releasing the control lease %s", rel)
	}
	return r.verdict()
}

// verdict sums a run up: the refused keys, then the failures.
func (r *keyRun) verdict() observation {
	me, meDetail := r.e.checkME()
	refused := "none"
	if len(r.refused) > 0 {
		refused = strings.Join(r.refused, ", ")
	}
	detail := fmt.Sprintf("refused with ErrInvalidArgument: %s; %d of %d keys independent locks", refused, len(r.taken), len(hostileKeys()))
	if len(r.failures) == 0 {
		return observation{held: me, detail: detail + "; " + meDetail}
	}
	const shown = 6
	fs := r.failures[:min(len(r.failures), shown)]
	more := ""
	if len(r.failures) > shown {
		more = fmt.Sprintf(" (and %d more)", len(r.failures)-shown)
	}
	return brokeObs("%d failure(s): %s%s; %s; %s", len(r.failures), strings.Join(fs, "; "), more, detail, meDetail)
}
