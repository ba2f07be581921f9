// Package benchutil holds what the benchmarks report besides ns/op (the
// process's CPU time, the robust figure on a shared machine, and latency
// percentiles) and what they read: the scale benchmark's corpus and
// query files, and their settings from the environment.
package benchutil

import (
	"math"
	"slices"
	"syscall"
	"testing"
	"time"
)

// CPUTime is the CPU time this process has used so far, user and system
// (0 when the system does not say).
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Percentiles reports the p50 and p99 of lat (nearest rank) in
// microseconds as the metrics p50-µs and p99-µs. lat is left as it was.
func Percentiles(b *testing.B, lat []time.Duration) {
	b.Helper()
	if len(lat) == 0 {
		return
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	at := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return float64(s[max(0, min(i, len(s)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}
