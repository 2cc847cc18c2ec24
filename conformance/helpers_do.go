package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock"
)

// expectH1: Do's own promises (fn's context cancelled once the lease's
// Done closes on a loss, and never for a lease still held) hold on every
// backend. How soon a cut-off holder learns of its loss is the backend's
// LostNotification: without it, the cut-off part is measured.
func expectH1(g distlock.Guarantees, h *Harness) expectation {
	if h.Links != nil && !g.LostNotification {
		return measure()
	}
	return holds()
}

// doSection is one distlock.Do call of H1 whose fn waits for its context
// to end, for stop, or for its time limit, and records what it saw.
type doSection struct {
	entered  chan struct{} // closed when fn starts
	end      chan struct{} // closed by stop: fn returns
	endOnce  sync.Once
	returned chan struct{} // closed when Do has returned and the watcher exited

	enteredAt atomic.Int64 // unix nanos: fn started
	cancelAt  atomic.Int64 // unix nanos: fn saw its context end (0: never)
	doneAt    atomic.Int64 // unix nanos: the lease's Done closed on a loss (0: never)

	mu    sync.Mutex
	cause error // context.Cause of fn's context once it ended
	err   error // Do's error
}

// startDo runs Do (TryDo if try) on l for key in a goroutine joined
// when the scenario ends; fn returns limit after it started at the
// latest. A second goroutine stamps when the lease's Done closes on a
// loss; it ends with Done or once Do has returned, and is joined with the
// first.
func startDo(e *env, l distlock.Locker, key string, try bool, limit time.Duration) *doSection {
	s := &doSection{entered: make(chan struct{}), end: make(chan struct{}), returned: make(chan struct{})}
	e.t.Cleanup(func() {
		s.stop()
		<-s.returned
	})
	go func() { // owned: joined by the cleanup above
		defer close(s.returned)
		watchStop, watched := make(chan struct{}), make(chan struct{})
		started := false
		do := distlock.Do
		if try {
			do = distlock.TryDo
		}
		err := do(e.ctx, l, key, func(ctx context.Context, ls distlock.Lease) error {
			started = true
			go func() { // owned: joined below, after Do returns
				defer close(watched)
				select {
				case <-ls.Done():
					if errors.Is(ls.Err(), distlock.ErrLeaseLost) {
						s.doneAt.Store(time.Now().UnixNano())
					}
				case <-watchStop:
				}
			}()
			s.enteredAt.Store(time.Now().UnixNano())
			close(s.entered)
			t := time.NewTimer(limit)
			defer t.Stop()
			select {
			case <-ctx.Done():
				s.cancelAt.Store(time.Now().UnixNano())
				s.mu.Lock()
				s.cause = context.Cause(ctx)
				s.mu.Unlock()
			case <-s.end:
			case <-t.C:
			}
			return nil
		}, distlock.WithTTL(e.ttl), helperRetry())
		close(watchStop)
		if started {
			<-watched
		}
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
	}()
	return s
}

// start waits for fn to start; it returns a problem if it has not within
// 10 TTLs, or if Do returned without running it.
func (s *doSection) start(e *env, part string) string {
	select {
	case <-s.entered:
		return ""
	case <-s.returned:
		select {
		case <-s.entered:
			return ""
		default:
		}
		_, err := s.result()
		return fmt.Sprintf("%s: Do returned %v without running fn on a free key", part, err)
	case <-time.After(10 * e.ttl):
		return fmt.Sprintf("%s: Do did not start fn within 10 TTLs", part)
	case <-e.ctx.Done():
		return fmt.Sprintf("%s: the scenario ended before Do started fn", part)
	}
}

// stop ends fn (once).
func (s *doSection) stop() { s.endOnce.Do(func() { close(s.end) }) }

// finish ends fn and waits (up to d) for Do to return; it reports whether
// Do returned.
func (s *doSection) finish(e *env, d time.Duration) bool {
	s.stop()
	return waitFor(e.ctx, s.returned, d)
}

func (s *doSection) result() (cause, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cause, s.err
}

// doReleaseBound is how long H1 waits for Do to return once fn has: the
// release, bounded by distlock.DoReleaseTimeout, and a second.
const doReleaseBound = distlock.DoReleaseTimeout + time.Second

// h1 runs three Do sections on separate keys: one on healthy servers for
// 4 TTLs (its context must stay alive and the key held), at the same time
// one whose lease an operator revokes, then, where the harness can cut a
// client off, one whose holder is black-holed while another client
// acquires. The revoked and the cut-off sections' contexts must be
// cancelled with a cause matching ErrLeaseLost, within lnTolerance of the
// lease's Done; the cut-off one before the other client's acquire returns
// (give or take lnTolerance), where the backend promises
// LostNotification.
func h1(e *env) observation {
	var healthy []string
	var healthyNote string
	var wg sync.WaitGroup
	ha, hb := e.locker(helperClient), e.locker(helperClient)
	wg.Go(func() { healthy, healthyNote = doHealthy(e, ha, hb, e.key+"/healthy") })
	e.t.Cleanup(wg.Wait) // if the scenario stops early; before e.ctx is cancelled
	m := map[string]float64{}
	var problems, notes []string
	if e.h.Revoke != nil {
		p, n := doRevoked(e, e.key+"/revoked", m)
		problems, notes = append(problems, p...), append(notes, n...)
	} else {
		notes = append(notes, "revocation: n/a (no revocation hook)")
	}
	if e.h.Links != nil {
		p, n := doCutOff(e, e.key+"/cut", m)
		problems, notes = append(problems, p...), append(notes, n...)
	} else {
		notes = append(notes, "cut-off holder: n/a (no per-client links)")
	}
	wg.Wait()
	problems = append(healthy, problems...)
	if healthyNote != "" {
		notes = append([]string{healthyNote}, notes...)
	}
	if len(problems) > 0 {
		return observation{detail: strings.Join(append(problems, notes...), "; "), metrics: m}
	}
	return observation{held: true, detail: strings.Join(notes, "; "), metrics: m}
}

// doHealthy: a Do section holds key for 4 TTLs on healthy servers while
// another client tries for it with TryDo every TTL/4; fn's context must
// not be cancelled, the other client's TryDo must fail without running
// its fn (with ErrNotAcquired, or ErrUnavailable on a loaded host), Do
// must return nil.
// It runs in a goroutine of its own: it may not stop the test.
func doHealthy(e *env, a, b distlock.Locker, key string) (problems []string, note string) {
	hold := 4 * e.ttl
	s := startDo(e, a, key, false, hold+e.ttl)
	if p := s.start(e, "healthy"); p != "" {
		return []string{p}, ""
	}
	tries, stolen, unavailable := 0, 0, 0
	var odd error // a TryDo error other than ErrNotAcquired and ErrUnavailable
	for deadline := time.Now().Add(hold); time.Now().Before(deadline) && s.cancelAt.Load() == 0 && e.ctx.Err() == nil; {
		sleepCtx(e.ctx, e.ttl/4)
		ran := false
		err := distlock.TryDo(withTimeout(e, 2*e.ttl), b, key, func(context.Context, distlock.Lease) error {
			ran = true
			return nil
		}, distlock.WithTTL(e.ttl))
		tries++
		switch {
		case ran:
			stolen++
		case errors.Is(err, distlock.ErrUnavailable):
			unavailable++ // not judged: a loaded host can time a request out
		case odd == nil && !errors.Is(err, distlock.ErrNotAcquired):
			odd = err
		}
	}
	cancelled := s.cancelAt.Load()
	if !s.finish(e, doReleaseBound) {
		problems = append(problems, fmt.Sprintf("healthy: Do still running %v after fn returned", doReleaseBound))
	}
	cause, err := s.result()
	switch {
	case cancelled != 0:
		problems = append(problems, fmt.Sprintf("healthy: fn's context cancelled %v into a %v hold on healthy servers (cause: %v)",
			time.Duration(cancelled-s.enteredAt.Load()).Round(time.Millisecond), hold, cause))
	case stolen > 0:
		problems = append(problems, fmt.Sprintf("healthy: another client acquired the key %d of %d times while Do held it", stolen, tries))
	case odd != nil:
		problems = append(problems, fmt.Sprintf("healthy: another client's TryDo on the held key returned %v, want an error matching ErrNotAcquired", odd))
	case err != nil:
		problems = append(problems, fmt.Sprintf("healthy: Do returned %v for a section that kept its lease", err))
	}
	if len(problems) > 0 {
		return problems, ""
	}
	note = fmt.Sprintf("healthy: fn's context alive through a %v hold, the other client's TryDo refused %d times", hold, tries)
	if unavailable > 0 {
		note += fmt.Sprintf(" (%d of them ErrUnavailable)", unavailable)
	}
	return nil, note
}

// doRevoked: an operator revokes the lease of a TryDo section while
// another client waits for the key.
func doRevoked(e *env, key string, m map[string]float64) (problems, notes []string) {
	a, b := e.locker(helperClient), e.locker(helperClient)
	s := startDo(e, a, key, true, 5*e.ttl)
	if p := s.start(e, "revocation"); p != "" {
		return []string{p}, nil
	}
	other := acquireAsync(e, b, key, 5*e.ttl)
	sleepCtx(e.ctx, e.ttl/10) // the other client is waiting
	revoked := time.Now()
	if err := e.h.Revoke(e.ctx, key); err != nil {
		e.t.Fatalf("revoke: %v", err)
	}
	notified := eventually(e.ctx, 3*e.ttl, func() bool { return s.cancelAt.Load() != 0 })
	returned := s.finish(e, doReleaseBound)
	bres := other.wait(e)
	cause, err := s.result()
	cancelAt, doneAt := s.cancelAt.Load(), s.doneAt.Load()
	p, detail := judgeCancel("revocation", e, notified, returned, cancelAt, doneAt, cause, err, e.g.LostNotification)
	if !notified {
		return p, []string{"revocation: fn's context not cancelled within 3 TTLs (no lost-lease notification promised)"}
	}
	m["revoke_cancel_ms"] = millis(time.Duration(cancelAt - revoked.UnixNano()))
	detail += fmt.Sprintf(", %s after the revocation", fmtDur(time.Duration(cancelAt-revoked.UnixNano())))
	if bres.err == nil {
		m["revoke_margin_ms"] = millis(time.Duration(bres.ret - cancelAt))
		detail += fmt.Sprintf("; the waiting client acquired %s fn's context ended (measured, not judged: a revocation frees the key before any holder can be told)",
			relDur(time.Duration(bres.ret-cancelAt)))
	} else {
		p = append(p, fmt.Sprintf("revocation: the waiting client did not acquire the revoked key: %v", bres.err))
	}
	return p, []string{detail}
}

// doCutOff: the holder of a Do section is black-holed from every server
// while another client acquires; with LostNotification fn's context must
// end before that client's acquire returns.
func doCutOff(e *env, key string, m map[string]float64) (problems, notes []string) {
	a, b := e.locker(helperCutClient), e.locker(helperClient)
	s := startDo(e, a, key, false, 6*e.ttl)
	if p := s.start(e, "cut-off"); p != "" {
		return []string{p}, nil
	}
	link := e.h.Links(helperCutClient)
	cut := time.Now()
	e.blackhole(link)
	other := acquireAsync(e, b, key, 3*e.ttl)
	bres := other.wait(e)
	notified := eventually(e.ctx, time.Until(cut.Add(3*e.ttl)), func() bool { return s.cancelAt.Load() != 0 })
	e.heal(link)
	returned := s.finish(e, doReleaseBound)
	cause, err := s.result()
	cancelAt, doneAt := s.cancelAt.Load(), s.doneAt.Load()
	p, detail := judgeCancel("cut-off", e, notified, returned, cancelAt, doneAt, cause, err, e.g.LostNotification)
	if bres.err != nil {
		// Not the property under test: a backend that cannot hand the
		// key over after a holder is cut off fails S11 as well.
		return append(p, fmt.Sprintf("cut-off: DF: the other client did not acquire within 3 TTLs of the cut: %v", bres.err)), nil
	}
	m["cut_reacquire_ms"] = millis(time.Duration(bres.ret - cut.UnixNano()))
	if !notified {
		if !e.g.LostNotification {
			return p, []string{"cut-off: fn's context not cancelled within 3 TTLs (no lost-lease notification promised)"}
		}
		return p, nil
	}
	margin := time.Duration(bres.ret - cancelAt)
	m["cut_cancel_ms"], m["cut_margin_ms"] = millis(time.Duration(cancelAt-cut.UnixNano())), millis(margin)
	detail += fmt.Sprintf(", %s after the cut and %s the other client's acquire returned", fmtDur(time.Duration(cancelAt-cut.UnixNano())), relDur(-margin))
	if -margin > lnTolerance(e.ttl) {
		msg := fmt.Sprintf("cut-off: LN: fn's context cancelled %v after the other client's acquire returned (tolerance %v)", (-margin).Round(time.Millisecond), lnTolerance(e.ttl))
		if e.g.LostNotification {
			return append(p, msg), nil
		}
		detail += " (" + msg + "; no lost-lease notification promised)"
	}
	return p, []string{detail}
}

// judgeCancel checks what Do's promises say about a section whose lease
// was lost: fn's context cancelled (required where the backend promises
// LostNotification, and wherever the lease's Done closed), within
// lnTolerance of Done, with a cause matching ErrLeaseLost; Do returning
// in time with an error matching ErrLeaseLost.
func judgeCancel(part string, e *env, notified, returned bool, cancelAt, doneAt int64, cause, err error, ln bool) (problems []string, detail string) {
	switch {
	case !notified && doneAt != 0:
		problems = append(problems, fmt.Sprintf("%s: the lease's Done closed but fn's context was not cancelled %v later", part,
			time.Since(time.Unix(0, doneAt)).Round(time.Millisecond)))
	case !notified && ln:
		problems = append(problems, fmt.Sprintf("%s: LN: the holder was not told within 3 TTLs (neither Done nor fn's context)", part))
	case !notified:
	case !errors.Is(cause, distlock.ErrLeaseLost):
		problems = append(problems, fmt.Sprintf("%s: fn's context ended with cause %v, want one matching ErrLeaseLost", part, cause))
	case doneAt != 0 && time.Duration(cancelAt-doneAt) > lnTolerance(e.ttl):
		problems = append(problems, fmt.Sprintf("%s: fn's context cancelled %v after the lease's Done closed (tolerance %v)", part,
			time.Duration(cancelAt-doneAt).Round(time.Millisecond), lnTolerance(e.ttl)))
	}
	switch {
	case !returned:
		problems = append(problems, fmt.Sprintf("%s: Do still running %v after fn returned", part, doReleaseBound))
	case notified && !errors.Is(err, distlock.ErrLeaseLost):
		problems = append(problems, fmt.Sprintf("%s: Do returned %v, want an error matching ErrLeaseLost", part, err))
	}
	return problems, fmt.Sprintf("%s: fn's context cancelled, cause matching ErrLeaseLost", part)
}

// asyncAcquire is a blocking Acquire running in a goroutine of its own.
type asyncAcquire struct {
	done chan struct{}
	err  error
	ret  int64 // unix nanos when Acquire returned
}

// acquireAsync starts a blocking Acquire of key on l bounded by d; on
// success the lease is released at once. The goroutine is joined by wait,
// or when the scenario ends.
func acquireAsync(e *env, l distlock.Locker, key string, d time.Duration) *asyncAcquire {
	a := &asyncAcquire{done: make(chan struct{})}
	ctx := withTimeout(e, d)
	e.t.Cleanup(func() { <-a.done })
	go func() { // owned: joined by wait or the cleanup above
		defer close(a.done)
		ls, err := l.Acquire(ctx, key, distlock.WithTTL(e.ttl), helperRetry())
		a.ret, a.err = time.Now().UnixNano(), err
		if err == nil {
			_ = ls.Release(e.ctx)
		}
	}()
	return a
}

// wait returns the acquisition once it has ended.
func (a *asyncAcquire) wait(e *env) *asyncAcquire {
	<-a.done
	return a
}

// fmtDur formats d to the millisecond, or to 10 µs below 10 ms.
func fmtDur(d time.Duration) string {
	if d > -10*time.Millisecond && d < 10*time.Millisecond {
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// relDur says how far d is after (positive) or before a moment: "3ms
// after", "2ms before".
func relDur(d time.Duration) string {
	if d < 0 {
		return fmtDur(-d) + " before"
	}
	return fmtDur(d) + " after"
}
