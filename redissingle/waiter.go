package redissingle

import (
	"slices"
	"strconv"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
)

// waiter is one blocked Acquire call. Its server entry names the Locker's
// channel, the waiter and its token, so that a release can hand the key
// over and notify exactly this waiter.
type waiter struct {
	id, token, entry string
	ch               chan struct{} // capacity 1: a wake-up (hand-off, subscription change, Close)

	// handoff is the fence of a hand-off notification not yet taken, 0
	// if none. Protected by Locker.lc's mutex (the subscriber writes it).
	handoff uint64

	// Owned by the Acquire call.
	queued bool        // our entry may be queued, or the key ours unbeknownst to us
	gen    uint64      // subscription generation that covered our last request; 0: none
	pollAt time.Time   // when to ask the server again even without a wake-up
	timer  *time.Timer // wakes ch for the next turn
}

func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// newWaiter registers a waiter for an Acquire with options o; it returns
// nil once Close has begun, so that no waiter Close did not wake can
// block.
func (l *Locker) newWaiter(o distlock.Options) *waiter {
	l.lc.Lock()
	defer l.lc.Unlock()
	if l.lc.ClosedLocked() {
		return nil
	}
	l.nextID++
	id := strconv.FormatUint(l.nextID, 16)
	token := lease.NewToken()
	w := &waiter{
		id: id, token: token, ch: make(chan struct{}, 1),
		entry: l.channel + "|" + id + "|" + token + "|" + strconv.FormatInt(ms(o.TTL), 10),
	}
	l.waiters[id] = w
	return w
}

// arm makes w's channel fire after d, when its Acquire must try again.
func (w *waiter) arm(d time.Duration) {
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.wake)
		return
	}
	w.timer.Reset(d)
}

// maxLeaving bounds Locker.leaving: beyond it the oldest records are
// dropped, and a hand-off to one of those waiters waits for the next
// waiter's poll.
const maxLeaving = 1024

// leaver is a waiter that gave up and may still be queued: its keys and
// token, for passing on a hand-off that reaches it (see deliver).
type leaver struct {
	k     keySet
	token string
	ttl   time.Duration
}

// finish unregisters w when its Acquire returns; if it failed while it
// may be queued or hold the key, a clean-up leaves the queue and passes
// the key on. Until that clean-up has run, w stays in l.leaving: its
// entry may still be queued (the clean-up gives up once ttl has passed),
// and deliver passes on a hand-off to it.
func (l *Locker) finish(k keySet, w *waiter, failed bool, ttl time.Duration) {
	l.lc.Lock()
	delete(l.waiters, w.id)
	handed := w.handoff != 0
	clean := failed && (w.queued || handed)
	if clean {
		l.leaving[w.id] = leaver{k: k, token: w.token, ttl: ttl}
		l.leavingOrder = append(l.leavingOrder, w.id)
		if len(l.leavingOrder) > maxLeaving {
			delete(l.leaving, l.leavingOrder[0])
			l.leavingOrder = slices.Delete(l.leavingOrder, 0, 1)
		}
	}
	l.lc.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	if clean {
		l.cleanupThen(k, w.token, w.entry, ttl, func() {
			l.lc.Lock()
			delete(l.leaving, w.id)
			l.lc.Unlock()
		})
	}
}
