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
