package vector

// WrapErr exposes the error classification to the black-box tests.
var WrapErr = wrapErr

// EfFor exposes the ef_search a request searches with.
var EfFor = efFor

// SetBuildHook makes f run before each bulk build's CREATE INDEX, with
// the build's V (interleaving tests).
func SetBuildHook(b *Backend, f func(v int64)) { b.buildHook = f }

// SetCommitHook makes f run inside each commit's transaction, after its
// rows are written and before COMMIT (interleaving tests).
func SetCommitHook(b *Backend, f func()) { b.commitHook = f }
