package conformance

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/leader"
)

// campaignEndBound is how long a candidate may take to end its campaign
// once told to: the term's release is bounded by
// distlock.DoReleaseTimeout.
const campaignEndBound = distlock.DoReleaseTimeout + 5*time.Second

// candidateOptions are H2's campaign settings for a TTL: a backoff short
// against the TTL, a resign delay of 3 TTLs (so that a resigning leader
// hands over to another candidate), the polling delay of the backend
// scenarios.
func candidateOptions(ttl time.Duration, observe func(leader.Event)) []leader.Option {
	return []leader.Option{
		leader.WithBackoff(ttl/4, ttl),
		leader.WithResignDelay(3 * ttl),
		leader.WithObserver(observe),
		leader.WithLockOptions(distlock.WithTTL(ttl), helperRetry()),
	}
}

// leaderWork is the leader's work in H2: sections on the parent's
// registers (read both, hold, write both back unless the term's context
// has ended), until the context ends or a register call fails.
func leaderWork(read func() (plain, fenced int64, err error), write func(plain, fenced int64, fence uint64) error, hold time.Duration) leader.Work {
	return func(ctx context.Context, term leader.Term) error {
		for {
			p, f, err := read()
			if err != nil {
				return err
			}
			t := time.NewTimer(hold)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			if ctx.Err() != nil {
				return nil
			}
			if err := write(p, f, term.Fence); err != nil {
				return err
			}
		}
	}
}

// candidateLocal is a leader candidate in this process, on a Locker of
// its own, for backends whose clients cannot be worker processes.
type candidateLocal struct {
	c         *leader.Candidate
	cancel    context.CancelFunc
	done      chan struct{}
	abandoned atomic.Bool // Run did not return within campaignEndBound
}

// startLocalCandidate starts a candidate goroutine for e.key, joined by
// close or when the scenario ends; a Run that does not return within
// campaignEndBound of its context's end is abandoned (close reports it).
func startLocalCandidate(e *env, id int, l distlock.Locker, log *eventLog) *candidateLocal {
	e.t.Helper()
	read := func() (int64, int64, error) { return e.plain.read(), e.fenced.read(), nil }
	write := func(p, f int64, fence uint64) error {
		e.plain.write(id, fence, p)
		e.fenced.write(id, fence, f)
		return nil
	}
	observe := func(ev leader.Event) {
		log.add(leaderEvent{cand: id, kind: ev.Kind.String(), fence: ev.Term.Fence, at: ev.At.UnixNano()})
	}
	c, err := leader.NewCandidate(l, e.key, leaderWork(read, write, leaderHold), candidateOptions(e.ttl, observe)...)
	if err != nil {
		e.t.Fatalf("NewCandidate: %v", err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	lc := &candidateLocal{c: c, cancel: cancel, done: make(chan struct{})}
	log.add(leaderEvent{cand: id, kind: "ready", at: time.Now().UnixNano()})
	go func() { // owned: joined by close
		defer close(lc.done)
		_ = c.Run(ctx)
	}()
	e.t.Cleanup(func() { lc.close() })
	return lc
}

func (lc *candidateLocal) resign(ctx context.Context) error { return lc.c.Resign(ctx) }

// close ends the campaign and waits up to campaignEndBound for Run to
// return; it reports whether Run returned. A Run that did not is
// abandoned: a later close does not wait for it again.
func (lc *candidateLocal) close() bool {
	lc.cancel()
	if lc.abandoned.Load() {
		return false
	}
	t := time.NewTimer(campaignEndBound)
	defer t.Stop()
	select {
	case <-lc.done:
		return true
	case <-t.C:
		lc.abandoned.Store(true)
		return false
	}
}

// kill is not possible in this process: H2 revokes the leader's lease
// instead.
func (lc *candidateLocal) kill() {}

// campaigner is an H2 candidate: a worker process or a goroutine.
type campaigner interface {
	// resign makes the candidate resign and waits for Resign to return.
	resign(ctx context.Context) error
	// kill crashes the candidate (a worker process only).
	kill()
	// close ends the campaign gracefully and waits for it to end, at
	// most campaignEndBound; it reports whether it ended in time.
	close() bool
}

var (
	_ campaigner = (*candidateProc)(nil)
	_ campaigner = (*candidateLocal)(nil)
)

// leaderEvent is one leadership change a candidate reported.
type leaderEvent struct {
	cand  int
	kind  string // leader.Kind's name ("elected", "lost", "resigned", "stepped down"), or "ready" when it starts to campaign
	fence uint64
	at    int64 // unix nanos, on the machine's wall clock
}

// eventLog collects the candidates' events.
type eventLog struct {
	mu  sync.Mutex
	evs []leaderEvent
}

func (l *eventLog) add(ev leaderEvent) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *eventLog) all() []leaderEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]leaderEvent(nil), l.evs...)
}

// find returns the first event of kind (any kind if ""), at or after
// since, that match accepts.
func (l *eventLog) find(kind string, since int64, match func(leaderEvent) bool) (leaderEvent, bool) {
	for _, ev := range l.all() {
		if (kind == "" || ev.kind == kind) && ev.at >= since && match(ev) {
			return ev, true
		}
	}
	return leaderEvent{}, false
}

// await waits up to d for find to succeed.
func (l *eventLog) await(e *env, d time.Duration, kind string, since int64, match func(leaderEvent) bool) (leaderEvent, bool) {
	var ev leaderEvent
	ok := eventually(e.ctx, d, func() bool {
		var found bool
		ev, found = l.find(kind, since, match)
		return found
	})
	return ev, ok
}

// count returns how many events of kind were reported.
func (l *eventLog) count(kind string) int {
	n := 0
	for _, ev := range l.all() {
		if ev.kind == kind {
			n++
		}
	}
	return n
}
