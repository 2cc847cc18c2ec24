package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/multilock"
)

// H3's workload: multiClients clients, each on a Locker of its own, make
// multiRounds rounds each; a round takes a random set of 2 to 4 of
// multiKeys keys, passed in a random order, with multilock.Acquire.
const (
	multiClients = 4
	multiRounds  = 100
	multiKeys    = 6
)

// multiBound is how long one round may wait for its set before H3 calls
// it a deadlock: 10 TTLs, at least 10 s. Every lease is auto-extended, so
// a cycle of waiters would never resolve by expiry.
func multiBound(ttl time.Duration) time.Duration { return max(10*ttl, 10*time.Second) }

// multiRun is what H3's clients saw.
type multiRun struct {
	regs map[string]*resource // a register per key

	mu          sync.Mutex
	rounds      []time.Duration // how long each completed round waited for its set
	deadlock    string          // the first round that waited past the bound
	failures    []string        // other acquisition failures
	releaseErrs []string        // releases that returned an error
	lostInside  []string        // sets lost inside a section on healthy servers
}

func (r *multiRun) note(list *[]string, format string, args ...any) {
	r.mu.Lock()
	*list = append(*list, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// h3: multilock's canonical order must keep every round moving (no
// deadlock within multiBound) and each key exclusive (a register per key,
// and the per-key history checks, fences included).
func h3(e *env) observation {
	pool := make([]string, multiKeys)
	run := &multiRun{regs: map[string]*resource{}}
	for i := range pool {
		pool[i] = fmt.Sprintf("%s/k%d", e.key, i)
		run.regs[pool[i]] = newResource(false)
	}
	seed := uint64(time.Now().UnixNano())
	ctx, stop := context.WithCancel(e.ctx)
	defer stop()
	var wg sync.WaitGroup
	for i := range multiClients {
		l := e.locker(helperClient)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for round := range multiRounds {
				if ctx.Err() != nil || !run.round(ctx, e, stop, l, i+1, round, pool, rng) {
					return
				}
			}
		})
	}
	wg.Wait()
	return run.judge(e, seed)
}

// round takes one random set, makes a section on each key's register,
// and releases the set; false when the client must stop.
func (r *multiRun) round(ctx context.Context, e *env, stop context.CancelFunc, l distlock.Locker, client, round int, pool []string, rng *rand.Rand) bool {
	keys := slices.Clone(pool)
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	keys = keys[:2+rng.IntN(3)]
	bound := multiBound(e.ttl)
	actx, cancel := context.WithTimeout(ctx, bound)
	call := time.Now()
	ml, err := multilock.Acquire(actx, l, keys, distlock.WithTTL(e.ttl), distlock.WithAutoExtend(0), helperRetry())
	ret := time.Now()
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		return false // another client saw a deadlock: the run stops
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		r.mu.Lock()
		if r.deadlock == "" {
			r.deadlock = fmt.Sprintf("client %d, round %d: Acquire(%s) still waiting after %v", client, round, shortKeys(keys), bound)
		}
		r.mu.Unlock()
		stop()
		return false
	case err != nil:
		r.note(&r.failures, "client %d, round %d: Acquire(%s): %v", client, round, shortKeys(keys), cut(err.Error(), 200))
		return true
	}
	fences := ml.Fences()
	for _, k := range ml.Keys() {
		e.hist.Add(Op{Client: client, Key: k, Kind: OpAcquire, Outcome: OutcomeOK, Fence: fences[k], Call: call.UnixNano(), Return: ret.UnixNano()})
	}
	r.mu.Lock()
	r.rounds = append(r.rounds, ret.Sub(call))
	r.mu.Unlock()
	read := map[string]int64{}
	for _, k := range ml.Keys() {
		read[k] = r.regs[k].read()
	}
	sleepCtx(ctx, time.Duration(rng.IntN(3000))*time.Microsecond)
	lost := ml.Err() != nil
	if lost {
		r.note(&r.lostInside, "client %d, round %d: %v", client, round, ml.Err())
	} else {
		for _, k := range ml.Keys() {
			r.regs[k].write(client, fences[k], read[k])
		}
	}
	rctx, rcancel := context.WithTimeout(e.ctx, multilock.CleanupTimeout)
	rcall := time.Now()
	rerr := ml.Release(rctx)
	rret := time.Now()
	rcancel()
	for _, k := range ml.Keys() {
		op := Op{Client: client, Key: k, Kind: OpRelease, Outcome: OutcomeOK, Call: rcall.UnixNano(), Return: rret.UnixNano()}
		if lost {
			op.Kind, op.Call, op.Return = OpLost, rcall.UnixNano(), rcall.UnixNano()
		}
		e.hist.Add(op)
	}
	if rerr != nil && !lost {
		// Not judged: a quorum backend reports a node that did not
		// answer in time; the entry it may keep expires with its TTL.
		r.note(&r.releaseErrs, "client %d, round %d: %v", client, round, cut(rerr.Error(), 200))
	}
	return true
}

// judge folds the run into an observation.
func (r *multiRun) judge(e *env, seed uint64) observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var overlaps []string
	writes := 0
	for i := range multiKeys {
		k := fmt.Sprintf("%s/k%d", e.key, i)
		for _, lu := range r.regs[k].lostUpdates() {
			overlaps = append(overlaps, fmt.Sprintf("k%d: %s", i, lu))
		}
		w, _ := r.regs[k].stats()
		writes += w
	}
	hist := CheckMutex(e.hist.Ops(), 20*time.Second, vizDir())
	s := slices.Clone(r.rounds)
	slices.Sort(s)
	m := map[string]float64{"rounds": float64(len(s)), "overlaps": float64(len(overlaps)), "failures": float64(len(r.failures)), "release_errors": float64(len(r.releaseErrs))}
	waits := "no round completed"
	if len(s) > 0 {
		pct := func(q float64) time.Duration { return s[int(q*float64(len(s)-1))] }
		m["wait_p50_ms"], m["wait_p99_ms"], m["wait_max_ms"] = millis(pct(0.5)), millis(pct(0.99)), millis(s[len(s)-1])
		waits = fmt.Sprintf("set waits p50 %s, p99 %s, max %s", fmtDur(pct(0.5)), fmtDur(pct(0.99)), fmtDur(s[len(s)-1]))
	}
	detail := fmt.Sprintf("%d clients x %d rounds of 2-4 of %d keys in random order (seed %d): %d rounds completed, %s; %d register writes",
		multiClients, multiRounds, multiKeys, seed, len(s), waits, writes)
	if len(r.releaseErrs) > 0 {
		detail += fmt.Sprintf("; %d release(s) returned an error (not judged), first: %s", len(r.releaseErrs), r.releaseErrs[0])
	}
	var problems []string
	if r.deadlock != "" {
		problems = append(problems, "DF: deadlock: "+r.deadlock)
	}
	if len(overlaps) > 0 {
		problems = append(problems, fmt.Sprintf("ME: %d lost update(s) on the per-key registers, first: %s", len(overlaps), overlaps[0]))
	}
	if !hist.OK && !hist.Inconclusive {
		problems = append(problems, "history oracle (mutex model): "+hist.Detail+viz(hist))
	}
	if len(r.failures) > 0 {
		problems = append(problems, fmt.Sprintf("DF: %d acquisition(s) failed on healthy servers, first: %s", len(r.failures), r.failures[0]))
	}
	if len(r.lostInside) > 0 {
		problems = append(problems, fmt.Sprintf("%d auto-extended set(s) lost inside a section on healthy servers, first: %s", len(r.lostInside), r.lostInside[0]))
	}
	switch {
	case len(problems) > 0:
		return observation{detail: strings.Join(problems, "; ") + "; " + detail, metrics: m}
	case hist.Inconclusive:
		return observation{inconclusive: true, detail: "history check timed out; " + detail, metrics: m}
	}
	return observation{held: true, detail: fmt.Sprintf("%s; no overlap: %d ops checked", detail, hist.Ops), metrics: m}
}

// shortKeys names a set by the last element of each key ("k3,k0"), in
// the order given.
func shortKeys(keys []string) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k[strings.LastIndex(k, "/")+1:]
	}
	return strings.Join(out, ",")
}
