package app

import (
	"fmt"
	"math"
	"runtime/debug"

	"github.com/ragd/ragd/config"
)

// MemoryLimit is the Go runtime's soft memory limit ragd runs with, and
// where it came from.
type MemoryLimit struct {
	Bytes  int64  // 0: none
	Source string // "GOMEMLIMIT", "server.memory_limit_mb" or "none"
}

// String is the limit as ragd serve reports it at start.
func (m MemoryLimit) String() string {
	switch {
	case m.Source == "none":
		return "none"
	case m.Bytes == 0:
		return "none (" + m.Source + ")"
	}
	return fmt.Sprintf("%d MiB (%s)", m.Bytes>>20, m.Source)
}

// SetMemoryLimit applies cfg.Server.MemoryLimitMB as the runtime's soft
// memory limit (debug.SetMemoryLimit) unless the GOMEMLIMIT environment
// variable is set (getenv reads it), which the runtime has applied at
// start and which wins. It changes process-wide state: ragd serve calls
// it once, before opening the stores.
func SetMemoryLimit(cfg *config.Config, getenv func(string) string) MemoryLimit {
	if getenv("GOMEMLIMIT") != "" {
		b := debug.SetMemoryLimit(-1)
		if b == math.MaxInt64 { // GOMEMLIMIT=off
			b = 0
		}
		return MemoryLimit{Bytes: b, Source: "GOMEMLIMIT"}
	}
	mb := cfg.Server.MemoryLimitMB
	if mb <= 0 {
		return MemoryLimit{Source: "none"}
	}
	b := int64(mb) << 20
	debug.SetMemoryLimit(b)
	return MemoryLimit{Bytes: b, Source: "server.memory_limit_mb"}
}
