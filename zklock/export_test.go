package zklock

import (
	"context"
	"fmt"
	"time"
)

// SetHookBeforeHold makes f run in every grant, before the lease's node is
// registered as held; the returned func removes it.
func SetHookBeforeHold(f func(own string)) (restore func()) {
	testHookBeforeHold = f
	return func() { testHookBeforeHold = nil }
}

// DeletionSeen reports whether one of l's sessions has seen the deletion
// of the own node path of an acquisition in flight.
func DeletionSeen(l *Locker, path string) bool {
	for _, s := range l.openSessions() {
		s.mu.Lock()
		seen := s.queued[path]
		s.mu.Unlock()
		if seen {
			return true
		}
	}
	return false
}

// SessionID returns the server session that l's session for ttl (opened
// with Options.SessionTimeout 0) is using (0: none, or not opened) and
// whether it is connected.
func SessionID(l *Locker, ttl time.Duration) (sid int64, connected bool) {
	l.lc.Lock()
	s := l.sessions[ttl]
	l.lc.Unlock()
	if s == nil {
		return 0, false
	}
	return s.current()
}

// AbandonedCreate runs the recipe's create of a lock node of key carrying
// token on l's session for ttl, as an acquisition that captured the server
// session sid does; ctx ending makes it abandon the request in flight
// (the janitor then searches for the token).
func AbandonedCreate(ctx context.Context, l *Locker, ttl time.Duration, sid int64, key, token string) (string, error) {
	l.lc.Lock()
	s := l.sessions[ttl]
	l.lc.Unlock()
	if s == nil {
		return "", fmt.Errorf("no session for %v", ttl)
	}
	p, _, err := l.create(ctx, s, view{sid: sid}, key, l.Path(key), token, nil)
	return p, err
}

// SetHookBeforeRelist makes f run in every acquisition before each
// listing of the queue but the first (after a wake-up), with the own
// node's path; the returned func removes it.
func SetHookBeforeRelist(f func(own string)) (restore func()) {
	testHookBeforeRelist = f
	return func() { testHookBeforeRelist = nil }
}

// SetHookBeforeCreate makes f run in every acquisition just before the
// create of its lock node is sent; the returned func removes it.
func SetHookBeforeCreate(f func()) (restore func()) {
	testHookBeforeCreate = f
	return func() { testHookBeforeCreate = nil }
}

// SetHookBeforeExtend makes f run at the start of every extension's
// request (driver.Extend), with its context; the returned func removes it.
func SetHookBeforeExtend(f func(ctx context.Context)) (restore func()) {
	testHookBeforeExtend = f
	return func() { testHookBeforeExtend = nil }
}
