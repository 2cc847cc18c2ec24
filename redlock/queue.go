package redlock

import (
	"strings"
	"sync/atomic"
	"time"
)

// A blocked Acquire queues an entry, "channel|id", in the key's wait queue
// on every node (lua/acquire.lua); a release pops the first entry whose
// channel has a subscriber and tells that Locker ("wake" in
// lua/parts.lua). An entry must not outlive its waiter's wait: popped
// for a waiter that gave up or won, it would absorb the wake-up meant for the next waiter, who would sleep
// until its poll. So a waiter leaves the queues whenever it may have
// queued (leave), and a wake-up that reaches a Locker for a waiter no
// longer waiting, because the release ran before the leaving landed, is
// passed on to the next waiter (passOn).

// leave removes w's entry from key's queue on every node, in the
// background (one multiplexed round trip, bounded by the node timeout for
// ttl, on a goroutine owned by the Locker); if the key is free, the next
// waiter is woken in w's place. Acquire calls it when it returns, won or
// not, if it sent a queueing attempt, even one whose replies were lost.
func (l *Locker) leave(key string, w *waiter, ttl time.Duration) {
	l.runLeave(key, w.id, ttl, -1, testHookBeforeLeave.Load())
}

// passOn hands on a wake-up that node i sent this Locker for waiter id,
// which is no longer waiting: on node i, it runs the leave script for
// id's entry (already popped) on the queue of lock (the node's key name,
// Prefix included), which wakes the next waiter if the key is free. In
// the background, like leave. A lock name that is not one of this
// Locker's keys is ignored.
func (l *Locker) passOn(i int, lock, id string) {
	key, ok := strings.CutPrefix(lock, l.opts.Prefix)
	if !ok || l.checkKey(key) != nil || key == "" {
		return
	}
	l.runLeave(key, id, l.opts.Lock.TTL, i, nil)
}

// runLeave runs the leave script for waiter id's entry of key's queue on
// node only (-1: every node), on a goroutine owned by the Locker, after
// hook if not nil.
func (l *Locker) runLeave(key, id string, ttl time.Duration, node int, hook *func()) {
	k := l.keysFor(key)
	cmd := [][]string{{"EVALSHA", leaveScript.sha, "3", k.lock, k.fence, k.queue, l.channel + "|" + id}}
	l.lc.Go(func() {
		if hook != nil {
			(*hook)()
		}
		_, conns := l.fanout(l.lc.Closing().Context(), time.Now().Add(l.opts.nodeTimeout(ttl)), func(i int) [][]string {
			if node >= 0 && i != node {
				return nil
			}
			return cmd
		}, nil)
		l.done(conns)
	})
}

// testHookBeforeLeave runs in leave's goroutine before its requests (nil
// in production; tests set it while other goroutines run, hence atomic).
var testHookBeforeLeave atomic.Pointer[func()]
