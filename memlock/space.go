package memlock

import (
	"sync"
	"time"

	"github.com/distlock/distlock/internal/lease"
)

// space is one lock namespace shared by every Locker opened on it. Keys are
// freed by Release, by expiry (a timer per held key), or by Revoke.
type space struct {
	mu    sync.Mutex
	keys  map[string]*entry
	fence uint64 // one counter for the whole space: strictly increasing per key too
}

// entry is a key that is held or has waiters.
type entry struct {
	token   string
	fence   uint64
	label   string
	expires time.Time // monotonic
	lease   *lease.Lease
	timer   *time.Timer
	waiters []*waiter // FIFO; only the head is woken per hand-off
}

type waiter struct {
	ch    chan struct{}
	woken bool
}

func newSpace() *space { return &space{keys: map[string]*entry{}} }

var named = struct {
	sync.Mutex
	spaces map[string]*space
}{spaces: map[string]*space{}}

// sharedSpace returns the process-wide space with this name.
func sharedSpace(name string) *space {
	named.Lock()
	defer named.Unlock()
	s := named.spaces[name]
	if s == nil {
		s = newSpace()
		named.spaces[name] = s
	}
	return s
}

// entryLocked returns key's entry, adding an empty one if key has none.
func (s *space) entryLocked(key string) *entry {
	e := s.keys[key]
	if e == nil {
		e = &entry{}
		s.keys[key] = e
	}
	return e
}

func (e *entry) held(now time.Time) bool { return e.token != "" && now.Before(e.expires) }

// freeLocked clears the holder of e, tells a still-live lease it is lost
// (cause non-nil), wakes the head waiter and drops e if nobody waits.
func (s *space) freeLocked(key string, e *entry, cause error) {
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	if cause != nil && e.lease != nil {
		e.lease.Lose(cause)
	}
	e.token, e.fence, e.label, e.lease = "", 0, "", nil
	s.wakeHeadLocked(e)
	if len(e.waiters) == 0 {
		delete(s.keys, key)
	}
}

func (s *space) wakeHeadLocked(e *entry) {
	if len(e.waiters) == 0 {
		return
	}
	w := e.waiters[0]
	e.waiters = e.waiters[1:]
	w.woken = true
	close(w.ch)
}

// expire runs from the key's timer: if the same holder is still there and
// its time is up, the key is freed and the next waiter woken.
func (s *space) expire(key, token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.keys[key]
	if e == nil || e.token != token {
		return
	}
	if left := time.Until(e.expires); left > 0 {
		e.timer.Reset(left)
		return
	}
	s.freeLocked(key, e, errExpired)
}

// subscribe queues a waiter for key; cancel removes it, and passes the
// wake-up on if it had already been woken (so no hand-off is lost).
func (s *space) subscribe(key string) (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entryLocked(key)
	w := &waiter{ch: make(chan struct{})}
	e.waiters = append(e.waiters, w)
	return w.ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		e := s.keys[key]
		if e == nil {
			return
		}
		if w.woken {
			if !e.held(time.Now()) {
				s.wakeHeadLocked(e)
			}
		} else {
			for i, x := range e.waiters {
				if x == w {
					e.waiters = append(e.waiters[:i], e.waiters[i+1:]...)
					break
				}
			}
		}
		if e.token == "" && len(e.waiters) == 0 {
			delete(s.keys, key)
		}
	}
}

// revoke frees key whoever holds it and tells the holder's lease it is
// lost; it reports whether the key was held.
func (s *space) revoke(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.keys[key]
	if e == nil || !e.held(time.Now()) {
		return false
	}
	s.freeLocked(key, e, errRevoked)
	return true
}

// wakeAll wakes every waiter of the space, so that those of a closed
// Locker see it closed and the others look again and wait on.
func (s *space) wakeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.keys {
		for len(e.waiters) > 0 {
			s.wakeHeadLocked(e)
		}
	}
}
