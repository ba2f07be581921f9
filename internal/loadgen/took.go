package loadgen

import (
	"fmt"
	"time"

	"github.com/ragd/ragd/spi"
)

// SourceTime is the distribution of the time one source took inside ragd
// (each answer's sources.<name>.took_ms) over the answers in which it
// answered ok.
type SourceTime struct {
	Answers  int
	P50, P99 time.Duration
}

// SourceTimes summarises, per source, the took_ms of the 200 answers in
// which the source's status was ok.
func SourceTimes(samples []Sample) map[string]SourceTime {
	took := map[string][]time.Duration{}
	for _, s := range samples {
		for src, st := range s.Sources {
			if st == "ok" {
				took[src] = append(took[src], s.Took[src])
			}
		}
	}
	out := make(map[string]SourceTime, len(took))
	for src, ds := range took {
		out[src] = SourceTime{Answers: len(ds), P50: Percentile(ds, 0.50), P99: Percentile(ds, 0.99)}
	}
	return out
}

// SourceTimesRow formats SourceTimes as "name p50 / p99 ms" parts in the
// order of Sources, then the query embedder's, skipping sources that never
// answered ok.
func SourceTimesRow(st map[string]SourceTime) []string {
	var parts []string
	for _, src := range spi.GatedSources() {
		if t, ok := st[src]; ok {
			parts = append(parts, fmt.Sprintf("%s %.1f / %.1f ms", src, ms(t.P50), ms(t.P99)))
		}
	}
	return parts
}
