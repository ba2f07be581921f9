package app_test

import (
	"math"
	"runtime/debug"
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
