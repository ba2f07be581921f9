package builtin

import "github.com/ragd/ragd/embedder/builtin/internal/sched"

// SetBatchHook makes fn run after each batch of an Embed call; tests using
// it must not run in parallel. It returns a function removing the hook.
func SetBatchHook(fn func()) (remove func()) {
	testHookBatchDone = fn
	return func() { testHookBatchDone = nil }
}

// SetSchedHooks sets the scheduler's test hooks of m (see
// sched.Scheduler.SetTestHooks): queued after a job is queued, pass before
// each pass with whether it holds queries and its sequence count.
func SetSchedHooks(m *Model, queued func(query bool), pass func(query bool, seqs int)) {
	var q func(sched.Priority)
	var p func(sched.Priority, int)
	if queued != nil {
		q = func(pr sched.Priority) { queued(pr == sched.Query) }
	}
	if pass != nil {
		p = func(pr sched.Priority, n int) { pass(pr == sched.Query, n) }
	}
	m.sched.SetTestHooks(q, p)
}

// PrecisionFor is precisionFor.
func PrecisionFor(qkernel string) string { return precisionFor(qkernel) }
