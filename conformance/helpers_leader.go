package conformance

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/distlock/distlock"
)

// leaderCandidates is how many candidates H2 runs; leaderHold is the
// length of one section of the leader's work.
const (
	leaderCandidates = 3
	leaderHold       = 10 * time.Millisecond
)

// expectH2: one leader at a time and a prompt failover are the leader
// package's promises over any backend whose leases exclude; H2 needs a
// way to end the leader's lease behind its back.
func expectH2(g distlock.Guarantees, h *Harness) expectation {
	if (h.URL == nil || !g.CrossProcess) && h.Revoke == nil {
		return notApplicable("needs worker processes (to kill the leader) or a revocation hook")
	}
	return holds()
}

// crashBound is how soon another client must get a key after its holder
// crashed: S07's bound.
func crashBound(e *env) time.Duration {
	if e.g.ReleasedOnCrash {
		return 2 * time.Second
	}
	return e.ttl + e.ttl/2 + 500*time.Millisecond
}

// h2: 3 candidates campaign for one key, each in a worker process of its
// own (goroutines with a Locker each where the backend's clients cannot
// be processes). The first leader is SIGKILLed (its lease revoked, for
// goroutines): another must lead within crashBound. That one resigns:
// the third must lead within a TTL and 500 ms. Throughout, every leader's
// work makes sections on the unfenced and the fenced register: a lost
// update on the unfenced one means two leaders at once (the fenced one
// reports how many writes of deposed leaders it refused); term fences
// must increase where the backend's fences are ordered; each term must
// end once, as the scenario ended it (endProblems).
func h2(e *env) observation {
	procs := e.h.URL != nil && e.g.CrossProcess
	log := &eventLog{}
	cands := make([]campaigner, leaderCandidates)
	for i := range cands {
		if procs {
			cands[i] = startCandidate(e, i+1, helperClient, log)
		} else {
			cands[i] = startLocalCandidate(e, i+1, e.locker(helperClient), log)
		}
	}
	kind, fault := "worker processes", "SIGKILLed"
	if !procs {
		kind, fault = "goroutines with a Locker each", "revoked"
	}
	startBound := 30*time.Second + 10*e.ttl
	if !eventually(e.ctx, startBound, func() bool { return log.count("ready") == leaderCandidates }) {
		return unrelatedObs("%d of %d candidates started to campaign within %v", log.count("ready"), leaderCandidates, startBound)
	}
	first, ok := log.await(e, startBound, "elected", 0, func(leaderEvent) bool { return true })
	if !ok {
		return unrelatedObs("no candidate was elected within %v", startBound)
	}
	sleepCtx(e.ctx, e.ttl)

	faultAt := time.Now()
	if procs {
		cands[first.cand-1].kill()
	} else if err := e.h.Revoke(e.ctx, e.key); err != nil {
		e.t.Fatalf("revoke: %v", err)
	}
	bound := crashBound(e)
	second, ok := log.await(e, 3*bound, "elected", faultAt.UnixNano(), func(ev leaderEvent) bool { return ev.cand != first.cand })
	if !ok {
		return brokeObs("DF: no other candidate led within %v of the leader being %s (bound %v)", 3*bound, fault, bound)
	}
	failover := time.Duration(second.at - faultAt.UnixNano())
	sleepCtx(e.ctx, e.ttl)

	resignAt := time.Now()
	var resignErr error
	var wg sync.WaitGroup
	wg.Go(func() { resignErr = cands[second.cand-1].resign(withTimeout(e, 10*e.ttl)) })
	handBound := e.ttl + 500*time.Millisecond
	third, ok := log.await(e, 3*handBound, "elected", resignAt.UnixNano(), func(ev leaderEvent) bool { return ev.cand != second.cand })
	wg.Wait()
	if !ok {
		return brokeObs("DF: no other candidate led within %v of the leader's Resign", 3*handBound)
	}
	handover := time.Duration(third.at - resignAt.UnixNano())
	sleepCtx(e.ctx, e.ttl)
	ended := make([]bool, len(cands))
	var closing sync.WaitGroup
	for i, c := range cands {
		closing.Go(func() { ended[i] = c.close() })
	}
	closing.Wait()
	var stuck []int
	for i, ok := range ended {
		if !ok {
			stuck = append(stuck, i+1)
		}
	}

	m := map[string]float64{
		"failover_ms": millis(failover), "failover_bound_ms": millis(bound), "failover_ttls": float64(failover) / float64(e.ttl),
		"handover_ms": millis(handover),
	}
	var problems []string
	if len(stuck) > 0 {
		problems = append(problems, fmt.Sprintf("candidate(s) %v still campaigning %v after being told to stop", stuck, campaignEndBound))
	}
	if failover > bound {
		problems = append(problems, fmt.Sprintf("DF: failover took %v after the leader was %s, bound %v", failover.Round(time.Millisecond), fault, bound))
	}
	if handover > handBound {
		problems = append(problems, fmt.Sprintf("DF: hand-over took %v after Resign, bound %v", handover.Round(time.Millisecond), handBound))
	}
	if resignErr != nil {
		problems = append(problems, fmt.Sprintf("Resign returned %v", resignErr))
	}
	killed := 0 // a SIGKILLed candidate's observer died with it
	if procs {
		killed = first.cand
	}
	ends, endNote := endProblems(log.all(), killed, e.g.LostNotification, first, second, third)
	problems = append(problems, ends...)
	problems = append(problems, termProblems(e, log.all())...)
	plainWrites, _ := e.plain.stats()
	fencedWrites, rejected := e.fenced.stats()
	terms := len(elected(log.all()))
	m["terms"], m["writes"], m["stale_rejected"] = float64(terms), float64(plainWrites), float64(rejected)
	if lost := e.plain.lostUpdates(); len(lost) > 0 {
		problems = append(problems, fmt.Sprintf("ME: %d lost update(s) on the unfenced register (two leaders at once), first: %s", len(lost), lost[0]))
	}
	detail := fmt.Sprintf("%d candidates (%s); leader %d %s, candidate %d led %s later (bound %v, %.2f TTL); it resigned, candidate %d led %s later; %d terms, fences %s; %d unfenced and %d fenced writes, %d stale writes rejected",
		leaderCandidates, kind, first.cand, fault, second.cand, fmtDur(failover), bound, float64(failover)/float64(e.ttl),
		third.cand, fmtDur(handover), terms, fenceNote(e), plainWrites, fencedWrites, rejected)
	if len(ends) == 0 {
		detail += "; " + endNote
	}
	switch {
	case len(problems) > 0:
		return observation{detail: strings.Join(problems, "; ") + "; " + detail + "; events: " + eventList(log.all(), faultAt), metrics: m}
	case plainWrites == 0:
		return observation{inconclusive: true, detail: "no leader completed a section; " + detail, metrics: m}
	}
	return observation{held: true, detail: detail + ", no lost update", metrics: m}
}

// eventList lists evs for a failure message, times relative to t0.
func eventList(evs []leaderEvent, t0 time.Time) string {
	parts := make([]string, len(evs))
	for i, ev := range evs {
		parts[i] = fmt.Sprintf("c%d %s fence %d at %s", ev.cand, ev.kind, ev.fence, fmtDur(time.Duration(ev.at-t0.UnixNano())))
	}
	return strings.Join(parts, ", ")
}

// fenceNote says what the terms' fences were checked for.
func fenceNote(e *env) string {
	if e.g.Fence == distlock.FenceNone {
		return "unique"
	}
	return "unique and increasing"
}

// elected returns the Elected events in the order they were seen.
func elected(evs []leaderEvent) []leaderEvent {
	var out []leaderEvent
	for _, ev := range evs {
		if ev.kind == "elected" {
			out = append(out, ev)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

// termProblems checks the terms' fences: never 0, never handed to two
// terms, and strictly increasing in election order where the backend's
// fences are ordered (no server lost state in H2).
func termProblems(e *env, evs []leaderEvent) []string {
	var problems []string
	seen := map[uint64]int{}
	terms := elected(evs)
	for i, ev := range terms {
		switch {
		case ev.fence == 0:
			problems = append(problems, fmt.Sprintf("FENCE: candidate %d's term has fence 0", ev.cand))
		case seen[ev.fence] != 0:
			problems = append(problems, fmt.Sprintf("FENCE: fence %d handed to candidates %d and %d", ev.fence, seen[ev.fence], ev.cand))
		case i > 0 && e.g.Fence != distlock.FenceNone && ev.fence <= terms[i-1].fence:
			problems = append(problems, fmt.Sprintf("FENCE: candidate %d elected with fence %d after candidate %d's term with fence %d",
				ev.cand, ev.fence, terms[i-1].cand, terms[i-1].fence))
		}
		seen[ev.fence] = ev.cand
	}
	return problems
}

// endProblems judges how the terms ended, as the candidates' observers
// (WithObserver) reported it: every term reports exactly one end, after
// its Elected, of the kind the scenario caused. The revoked leader's term
// ends Lost (where the backend promises LostNotification; elsewhere its
// kind is noted), the resigned one Resigned, and the last, ended by
// closing the campaigns, SteppedDown (Run's context ended); any other
// term, one end of any kind. killed (0: none) is the candidate SIGKILLed
// with its observer: its term's end is not observable, and the survivors'
// observers must report no end for it. note says what was judged.
func endProblems(evs []leaderEvent, killed int, ln bool, first, second, third leaderEvent) (problems []string, note string) {
	type termID struct {
		cand  int
		fence uint64
	}
	want := map[termID]string{{second.cand, second.fence}: "resigned", {third.cand, third.fence}: "stepped down"}
	switch {
	case killed != 0:
		note = "the killed leader's end not observable, "
	case ln:
		want[termID{first.cand, first.fence}] = "lost"
	}
	ends := map[termID][]leaderEvent{}
	for _, ev := range evs {
		if ev.kind != "ready" && ev.kind != "elected" {
			id := termID{ev.cand, ev.fence}
			ends[id] = append(ends[id], ev)
		}
	}
	var others []string
	for _, t := range elected(evs) {
		id := termID{t.cand, t.fence}
		got := ends[id]
		delete(ends, id)
		switch {
		case t.cand == killed:
		case len(got) != 1:
			problems = append(problems, fmt.Sprintf("candidate %d's term (fence %d) reported %d ends, want 1", t.cand, t.fence, len(got)))
		case got[0].at < t.at:
			problems = append(problems, fmt.Sprintf("candidate %d's term (fence %d) reported its end (%s) before its election", t.cand, t.fence, got[0].kind))
		case want[id] == "":
			others = append(others, fmt.Sprintf("candidate %d's term (fence %d) %s", t.cand, t.fence, got[0].kind))
		case got[0].kind != want[id]:
			problems = append(problems, fmt.Sprintf("candidate %d's term (fence %d) ended as %q, want %q", t.cand, t.fence, got[0].kind, want[id]))
		}
	}
	for id, got := range ends { // left: ends of no Elected term
		problems = append(problems, fmt.Sprintf("candidate %d reported an end (%s) of a term (fence %d) it was never elected to", id.cand, got[0].kind, id.fence))
	}
	sort.Strings(others)
	note += "each term ended once"
	if killed == 0 && ln {
		note += ", the revoked one lost"
	}
	note += ", the resigned one resigned, the last stepped down at close"
	if len(others) > 0 {
		note += " (" + strings.Join(others, "; ") + ")"
	}
	return problems, note
}
