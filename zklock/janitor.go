package zklock

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// cleanupTimeout bounds each request of the janitor, so that one request
// stuck on a connection that lost its replies does not hold up the others
// (it returns when go-zookeeper gives the connection up).
const cleanupTimeout = time.Second

// task is a lock node to delete: a known path, or the child of parent
// whose name carries guid (a create whose outcome is unknown). It is kept
// across server sessions (see clean): a create can land on a later one.
type task struct {
	s            *session
	path         string
	parent, guid string
	next         time.Time
	backoff      time.Duration
}

// cleanup queues t for the janitor: one goroutine per Locker, started on
// first use, that deletes abandoned nodes (cancelled waiters, creates
// whose reply was lost, leases that expired locally) as soon as their
// session is connected, retrying with back-off, until done or the
// Locker closes (closing the sessions deletes their nodes).
func (l *Locker) cleanup(t task) {
	t.backoff = 20 * time.Millisecond
	l.lc.Lock()
	if l.lc.ClosedLocked() {
		l.lc.Unlock()
		return // closing the sessions deletes their nodes
	}
	l.tasks = append(l.tasks, &t)
	start := !l.janitor
	l.janitor = true
	select {
	case l.wake <- struct{}{}:
	default:
	}
	l.lc.Unlock()
	if start {
		l.lc.Go(l.runJanitor) // refused only once Close has begun
	}
}

func (l *Locker) runJanitor() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		l.lc.Lock()
		now := time.Now()
		var due, wait []*task
		next := now.Add(time.Hour)
		for _, t := range l.tasks {
			if t.next.After(now) {
				wait = append(wait, t)
				next = minTime(next, t.next)
			} else {
				due = append(due, t)
			}
		}
		l.tasks = wait
		l.lc.Unlock()
		for _, t := range due {
			if l.lc.Closing().Fired() {
				return
			}
			if !l.clean(t) {
				t.next = time.Now().Add(t.backoff)
				t.backoff = min(2*t.backoff, time.Second)
				next = minTime(next, t.next)
				l.lc.Lock()
				l.tasks = append(l.tasks, t)
				l.lc.Unlock()
			}
		}
		timer.Reset(time.Until(next))
		select {
		case <-l.lc.Closing().Done():
			return
		case <-l.wake:
		case <-timer.C:
		}
	}
}

// clean makes one try at t and reports whether it is done. It does not
// give up when the session that sent the create has been replaced: a
// create still queued in go-zookeeper when the connection dropped is sent
// on the next session and can succeed there, leaving a node at the head
// of the key's queue for that session's whole life. The node's GUID is
// unique to the attempt, so finding and deleting it on any session is
// safe; a node that went with its session is simply not found.
func (l *Locker) clean(t *task) bool {
	if _, connected := t.s.current(); !connected {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if t.path == "" {
		children, err := call(l, ctx, func() ([]string, error) {
			c, _, err := t.s.conn.Children(t.parent)
			return c, err
		}, nil)
		if errors.Is(err, zk.ErrNoNode) {
			return true
		}
		if err != nil {
			return false
		}
		for _, c := range children {
			if hasGUID(c, t.guid) {
				t.path = t.parent + "/" + c
			}
		}
		if t.path == "" {
			return true // the create never took effect
		}
	}
	_, err := call(l, ctx, func() (struct{}, error) { return struct{}{}, t.s.conn.Delete(t.path, -1) }, nil)
	return err == nil || errors.Is(err, zk.ErrNoNode)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
