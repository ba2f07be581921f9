package app_test

import (
	"bytes"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/ragd/ragd/app"
	"github.com/ragd/ragd/config"
)

// TestSetMemoryLimit: the config's limit is applied, none leaves the
// runtime's as it was, and GOMEMLIMIT wins over the config.
func TestSetMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOMEMLIMIT" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name      string
		mb        int
		gomem     string
		runtime   int64 // the runtime's limit before (as GOMEMLIMIT would have set it)
		want      app.MemoryLimit
		wantAfter int64
	}{
		{"from config", 1536, "", math.MaxInt64, app.MemoryLimit{Bytes: 1536 << 20, Source: "server.memory_limit_mb"}, 1536 << 20},
		{"none", 0, "", math.MaxInt64, app.MemoryLimit{Source: "none"}, math.MaxInt64},
		{"GOMEMLIMIT wins", 1536, "700MiB", 700 << 20, app.MemoryLimit{Bytes: 700 << 20, Source: "GOMEMLIMIT"}, 700 << 20},
		{"GOMEMLIMIT off", 1536, "off", math.MaxInt64, app.MemoryLimit{Source: "GOMEMLIMIT"}, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(tc.runtime)
			cfg := config.Default()
			cfg.Server.MemoryLimitMB = tc.mb
			if got := app.SetMemoryLimit(&cfg, env(tc.gomem)); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.wantAfter {
				t.Errorf("runtime limit %d after, want %d", got, tc.wantAfter)
			}
		})
	}
}

// TestLimitGuard: rag.yaml's limit stays while the live heap is under
// three quarters of it; above, the runtime's limit is lifted to one and a
// half times the live heap (logged once), raised as the heap grows and
// never lowered while lifted; once the live heap is under five eighths,
// rag.yaml's limit is restored. GOMEMLIMIT and no limit get no guard.
func TestLimitGuard(t *testing.T) {
	const mib = 1 << 20
	var live uint64
	var sets []int64
	var logs bytes.Buffer
	g := app.NewLimitGuard(app.MemoryLimit{Bytes: 1024 * mib, Source: "server.memory_limit_mb"},
		slog.New(slog.NewTextHandler(&logs, nil)),
		func() uint64 { return live }, func(b int64) int64 { sets = append(sets, b); return 0 })
	for _, step := range []struct {
		live, want int64
		set        bool
	}{
		{500, 1024, false},
		{768, 1024, false}, // exactly three quarters: not above
		{800, 1200, true},  // lifted
		{900, 1350, true},  // raised
		{850, 1350, false}, // kept while above three quarters
		{700, 1350, false}, // and above five eighths
		{640, 1350, false}, // exactly five eighths: kept
		{639, 1024, true},  // restored
		{700, 1024, false}, // not lifted again under three quarters
		{1000, 1500, true}, // lifted again
	} {
		live = uint64(step.live * mib)
		n := len(sets)
		if got := g.Check(); got != step.want*mib {
			t.Errorf("live %d MiB: limit %d MiB, want %d", step.live, got/mib, step.want)
		}
		if set := len(sets) > n; set != step.set {
			t.Errorf("live %d MiB: set the runtime's limit %v, want %v", step.live, set, step.set)
		} else if set && sets[len(sets)-1] != step.want*mib {
			t.Errorf("live %d MiB: runtime limit set to %d MiB, want %d", step.live, sets[len(sets)-1]/mib, step.want)
		}
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 2 {
		t.Errorf("%d warnings, want 2 (one per crossing):\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "restored"); n != 1 {
		t.Errorf("%d restores logged, want 1:\n%s", n, logs.String())
	}
	for _, ml := range []app.MemoryLimit{{Bytes: 700 * mib, Source: "GOMEMLIMIT"}, {Source: "none"}, {Source: "server.memory_limit_mb"}} {
		if g := app.NewLimitGuard(ml, slog.Default(), nil, nil); g != nil {
			t.Errorf("a guard for %+v", ml)
		}
	}
}

// TestLimitGuardReadsTheRuntime: without a live func the guard reads the
// runtime's live heap (8 MiB kept alive here: above three quarters of a
// 1 MiB limit).
func TestLimitGuardReadsTheRuntime(t *testing.T) {
	keep := make([]byte, 8<<20)
	runtime.GC()
	var set int64
	g := app.NewLimitGuard(app.MemoryLimit{Bytes: 1 << 20, Source: "server.memory_limit_mb"}, slog.New(slog.DiscardHandler),
		nil, func(b int64) int64 { set = b; return 0 })
	if got := g.Check(); got < 12<<20 || set != got {
		t.Errorf("limit %d, set %d: want at least 12 MiB (1.5 × a live heap of 8 MiB or more)", got, set)
	}
	runtime.KeepAlive(keep)
}
