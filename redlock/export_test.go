package redlock

// The package's test hooks, for the tests of package redlock_test, which
// share TestRedlock's nodes. A hook is global: only tests that do not run
// in parallel with other acquisitions set one. Each setter returns the
// function that restores the hook to nil.

// SetHookBeforeWriteBack makes every acquisition that a majority granted
// call f before the fence write-back: f pauses the client between reading
// the nodes' replies and raising their counters.
func SetHookBeforeWriteBack(f func()) (restore func()) {
	testHookBeforeWriteBack = f
	return func() { testHookBeforeWriteBack = nil }
}

// SetHookBeforeLeave makes every waiter that leaves the queues call f in
// the background before its requests go out: f holds the entry of a
// waiter that gave up or won on the nodes.
func SetHookBeforeLeave(f func()) (restore func()) {
	testHookBeforeLeave.Store(&f)
	return func() { testHookBeforeLeave.Store(nil) }
}

// SetHookMessage makes every Locker call f(l, live) for each wake-up
// message its subscriptions receive; live says whether the waiter it
// names was still waiting.
func SetHookMessage(f func(l *Locker, live bool)) (restore func()) {
	testHookMessage.Store(&f)
	return func() { testHookMessage.Store(nil) }
}
