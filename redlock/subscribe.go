package redlock

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock/internal/resp"
	"github.com/distlock/distlock/internal/retry"
)

// testHookMessage runs in listen for every wake-up message, with whether
// its waiter is still waiting (nil in production; tests set it).
var testHookMessage atomic.Pointer[func(l *Locker, live bool)]

// pushUp reports whether a majority of the subscriptions are up.
func (l *Locker) pushUp() bool {
	n := 0
	for i := range l.subUp {
		if l.subUp[i].Load() {
			n++
		}
	}
	return n >= l.quorum
}

// startSubscribers starts one subscriber goroutine per node, once.
func (l *Locker) startSubscribers() {
	l.lc.Lock()
	start := !l.subStarted && !l.lc.ClosedLocked()
	l.subStarted = true
	l.lc.Unlock()
	if !start {
		return
	}
	for i := range l.nodes {
		l.lc.Go(func() { l.subscribe(i) })
	}
}

// subscribe keeps node i's subscription to the Locker's channel up until
// Close, reconnecting with back-off.
func (l *Locker) subscribe(i int) {
	nd := l.nodes[i]
	b := retry.Backoff{Min: 50 * time.Millisecond, Max: 2 * time.Second}
	for !l.lc.Closing().Fired() {
		c, err := nd.dial(l.lc.Closing().Context(), time.Now().Add(l.opts.DialTimeout), true)
		if err == nil {
			if l.listen(i, c) {
				b.Reset()
			}
			l.subUp[i].Store(false)
			nd.discard(c)
		}
		if !b.Wait(l.lc.Closing().Done()) {
			return
		}
	}
}

// listen subscribes c and dispatches messages until c fails; it reports
// whether the subscription was confirmed.
func (l *Locker) listen(i int, c *conn) bool {
	if _, err := c.roundTrip(time.Now().Add(l.opts.DialTimeout), []string{"SUBSCRIBE", l.channel}); err != nil {
		return false
	}
	if err := c.nc.SetDeadline(time.Time{}); err != nil {
		return false
	}
	l.subUp[i].Store(true)
	for {
		v, err := resp.ReadReply(c.br)
		if err != nil {
			return true
		}
		if m, ok := v.([]any); ok && len(m) == 3 && m[0] == "message" {
			payload, _ := m[2].(string)
			id, lock, _ := strings.Cut(payload, "|") // see "wake" in lua/parts.lua
			l.lc.Lock()
			w := l.waiters[id]
			l.lc.Unlock()
			if h := testHookMessage.Load(); h != nil {
				(*h)(l, w != nil)
			}
			if w != nil {
				w.pushed(l.quorum)
			} else if lock != "" {
				l.passOn(i, lock, id)
			}
		}
	}
}
