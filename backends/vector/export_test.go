package vector

// WrapErr exposes the error classification to the black-box tests.
var WrapErr = wrapErr
