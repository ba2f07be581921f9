package app

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"

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

// sourceConfig is MemoryLimit.Source for rag.yaml's limit.
const sourceConfig = "server.memory_limit_mb"

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
	return MemoryLimit{Bytes: b, Source: sourceConfig}
}

// A soft limit under the live heap keeps no memory down (live memory
// cannot be collected); it makes the collector run back to back, on up
// to half the CPU. Measured: the embedded graph of 200,000 documents,
// built under a limit just above its live heap, took 3.5× the time and
// 6× the CPU of the same build without one; a million documents with the
// graph switched on hold more live heap than the shipped 1 GiB. So while
// the live heap is above liftAt of the limit rag.yaml sets, ragd lifts
// the runtime's limit to liftTo times the live heap (raising it as the
// heap grows), says so once in the log, and puts rag.yaml's limit back
// once the live heap is under restoreAt of it (lower than liftAt: a heap
// hovering at liftAt, as a large build's does, would otherwise lift and
// restore every few seconds). A GOMEMLIMIT from the environment is left
// as it is: the runtime's own behaviour, chosen.
const (
	liftAtNum, liftAtDen       = 3, 4 // liftAt: three quarters
	restoreAtNum, restoreAtDen = 5, 8 // restoreAt: five eighths
	liftToNum, liftToDen       = 3, 2 // liftTo: one and a half
)

// LimitGuard lifts the soft memory limit above a live heap that has
// outgrown it (above). Check is one look; Run looks periodically.
type LimitGuard struct {
	configured int64
	live       func() uint64     // the live heap after the last collection
	set        func(int64) int64 // debug.SetMemoryLimit
	logger     *slog.Logger
	lifted     int64 // the limit in force while lifted; 0: rag.yaml's
}

// NewLimitGuard returns the guard of ml, or nil when ml is not rag.yaml's
// limit (GOMEMLIMIT, or none). live and set default to the runtime's.
func NewLimitGuard(ml MemoryLimit, logger *slog.Logger, live func() uint64, set func(int64) int64) *LimitGuard {
	if ml.Source != sourceConfig || ml.Bytes <= 0 {
		return nil
	}
	if live == nil {
		live = liveHeap
	}
	if set == nil {
		set = debug.SetMemoryLimit
	}
	return &LimitGuard{configured: ml.Bytes, live: live, set: set, logger: logger}
}

// Check compares the live heap with the configured limit and lifts,
// raises or restores the runtime's limit; it returns the limit in force.
func (g *LimitGuard) Check() int64 {
	live := int64(min(g.live(), math.MaxInt64/8)) // no product below overflows
	switch {
	case live*liftAtDen > g.configured*liftAtNum:
		want := max(g.configured, live*liftToNum/liftToDen)
		if want <= g.lifted {
			return g.lifted
		}
		if g.lifted == 0 {
			g.logger.Warn("memory: the live heap is above three quarters of server.memory_limit_mb; "+
				"the soft limit is lifted so that the collector does not run back to back: raise memory_limit_mb (docs/operations.md)",
				"live_mib", live>>20, "memory_limit_mib", g.configured>>20, "lifted_to_mib", want>>20)
		}
		g.lifted = want
		g.set(want)
		return want
	case g.lifted != 0 && live*restoreAtDen >= g.configured*restoreAtNum:
		return g.lifted
	case g.lifted != 0:
		g.logger.Info("memory: the live heap is back under five eighths of server.memory_limit_mb; the soft limit is restored",
			"live_mib", live>>20, "memory_limit_mib", g.configured>>20)
		g.lifted = 0
		g.set(g.configured)
	}
	return g.configured
}

// Run calls Check every interval until ctx ends.
func (g *LimitGuard) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.Check()
		}
	}
}

// liveHeap reads the runtime's live heap: the bytes the last collection
// marked.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
