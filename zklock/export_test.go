package zklock

// SetHookBeforeHold makes f run in every grant, before the lease's node is
// registered as held; the returned func removes it.
func SetHookBeforeHold(f func(own string)) (restore func()) {
	testHookBeforeHold = f
	return func() { testHookBeforeHold = nil }
}

// DeletionSeen reports whether one of l's sessions has seen the deletion
// of the own node path of an acquisition in flight.
func DeletionSeen(l *Locker, path string) bool {
	l.mu.Lock()
	ss := make([]*session, 0, len(l.sessions))
	for _, s := range l.sessions {
		ss = append(ss, s)
	}
	l.mu.Unlock()
	for _, s := range ss {
		s.mu.Lock()
		seen := s.queued[path]
		s.mu.Unlock()
		if seen {
			return true
		}
	}
	return false
}
