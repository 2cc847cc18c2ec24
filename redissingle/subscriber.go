package redissingle

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/retry"
)

// firstSubscribeWait bounds how long the first Acquire of a Locker waits
// for its subscription before it queues (a waiter queued without one is
// skipped by releases until it polls).
const firstSubscribeWait = time.Second

// subscriber owns a Locker's one pub/sub connection, subscribed to the
// Locker's channel, and the one goroutine that reads it. Releases publish
// "waiter|fence" there when they hand a key to one of this Locker's
// waiters. Each connection lives until its first error; the subscription
// is "up" from its confirmation to that error, and waiters trust push
// wake-ups only while it stays up (see Locker.setSub).
type subscriber struct {
	l     *Locker
	ready chan struct{} // closed once the first subscription succeeded or failed
	once  sync.Once

	mu     sync.Mutex
	ps     *redis.PubSub
	closed bool
}

// subscribe starts the subscriber on first use and waits, the first time,
// until it is subscribed (at most firstSubscribeWait or until ctx ends).
// Once Close has begun it starts nothing.
func (l *Locker) subscribe(ctx context.Context) {
	l.lc.Lock()
	s := l.sub
	if s == nil && l.lc.EnterLocked() {
		s = &subscriber{l: l, ready: make(chan struct{})}
		l.sub = s
		go s.run()
	}
	l.lc.Unlock()
	if s == nil {
		return
	}
	select {
	case <-s.ready: // every later turn: no timer
		return
	default:
	}
	_ = retry.Wait(ctx, firstSubscribeWait, s.ready) // ctx's end is the caller's to report
}

func (s *subscriber) setReady() { s.once.Do(func() { close(s.ready) }) }

// run connects, serves the connection until it fails, and reconnects with
// backoff, until Close. It owns the call registered by subscribe.
func (s *subscriber) run() {
	defer s.l.lc.Leave()
	defer s.setReady()
	b := retry.Backoff{Min: 10 * time.Millisecond, Max: time.Second}
	for {
		ps := s.l.client.Subscribe(context.Background(), s.l.channel)
		s.mu.Lock()
		closed := s.closed
		s.ps = ps
		s.mu.Unlock()
		if closed {
			_ = ps.Close()
			return
		}
		if s.serve(ps) {
			b.Reset()
		}
		s.l.setSub(false)
		s.setReady()
		_ = ps.Close()
		if !b.Wait(s.l.lc.Closing().Done()) {
			return
		}
	}
}

// serve reads ps until an error. An idle connection is pinged every
// PollInterval; a ping unanswered for another PollInterval counts as a
// broken connection. It reports whether the subscription was confirmed.
func (s *subscriber) serve(ps *redis.PubSub) (confirmed bool) {
	ctx := context.Background()
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, s.l.opts.PollInterval)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && !pinged && ps.Ping(ctx) == nil {
				pinged = true
				continue
			}
			return confirmed
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Channel == s.l.channel {
				confirmed = true
				s.l.setSub(true)
				s.setReady()
			}
		case *redis.Message:
			s.l.deliver(m.Payload)
		}
	}
}

// close ends the subscription; run then returns.
func (s *subscriber) close() {
	s.mu.Lock()
	s.closed = true
	ps := s.ps
	s.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
	}
}

// setSub records that the subscription came up (a new generation) or
// broke, and wakes every waiter: after a break a hand-off notification may
// have been lost, so each asks the server; after a (re)subscription each
// asks once to be covered by it.
func (l *Locker) setSub(up bool) {
	l.lc.Lock()
	defer l.lc.Unlock()
	if up {
		l.subGen++
	} else if !l.subUp {
		return
	}
	l.subUp = up
	for _, w := range l.waiters {
		w.wake()
	}
}

// deliver hands a notification "waiter|fence" to its waiter. One for a
// waiter that gave up and whose clean-up has not run (l.leaving) runs the
// cancel script again for it: the hand-off wrote that waiter's token,
// which the script replaces by a hand-off to the next waiter (or deletes).
// Any other one is for a waiter that took the key by polling and holds
// it, or whose clean-up ran and so passed the key on: it is dropped.
func (l *Locker) deliver(payload string) {
	id, f, ok := strings.Cut(payload, "|")
	fence, err := strconv.ParseUint(f, 10, 64)
	if !ok || err != nil || fence == 0 {
		return
	}
	l.lc.Lock()
	if w := l.waiters[id]; w != nil {
		w.handoff = fence
		w.wake()
		l.lc.Unlock()
		return
	}
	lv, leaving := l.leaving[id]
	delete(l.leaving, id)
	l.lc.Unlock()
	if leaving {
		l.cleanup(lv.k, lv.token, "", lv.ttl)
	}
}
