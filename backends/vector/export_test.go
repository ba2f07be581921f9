package vector

// WrapErr exposes the error classification to the black-box tests.
var WrapErr = wrapErr

// EfFor exposes the ef_search a request searches with.
var EfFor = efFor
