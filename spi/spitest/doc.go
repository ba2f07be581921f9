// Package spitest holds contract test suites shared by every implementation
// of an spi interface, so that a server-backed store and its embedded
// counterpart cannot drift apart. Each suite is a plain function taking a
// *testing.T and a harness that opens fresh stores; implementations call it
// from their own _test files.
package spitest
