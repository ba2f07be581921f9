package guard

import "github.com/ragd/ragd/wire"

// Snapshot is a guard's counters; the status API reports it, so it lives
// in package wire, which the Go client shares.
type Snapshot = wire.GuardSnapshot
