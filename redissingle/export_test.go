package redissingle

// SetForceHook has f run between ForceRelease's read and its script, and
// returns a function that restores the hook.
func SetForceHook(f func()) (restore func()) {
	old := testHookBeforeForce
	testHookBeforeForce = f
	return func() { testHookBeforeForce = old }
}
