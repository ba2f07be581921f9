package builtin

// SetBatchHook makes fn run after each batch of an Embed call; tests using
// it must not run in parallel. It returns a function removing the hook.
func SetBatchHook(fn func()) (remove func()) {
	testHookBatchDone = fn
	return func() { testHookBatchDone = nil }
}
