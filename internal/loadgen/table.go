package loadgen

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ragd/ragd/spi"
)

// Sources are the columns of the share-of-answers part of the table.
var Sources = spi.QuerySources()

// Header writes the markdown table header that Row rows belong to.
func Header(w io.Writer) {
	fmt.Fprintf(w, "| scenario | requests | req/s | p50 ms | p99 ms | CPU ms/query | non-200 | partial | %s | breaker transitions |\n",
		strings.Join(Sources, " ok | ")+" ok")
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|---:|---:|---:|%s---|\n", strings.Repeat("---:|", len(Sources)))
}

// Row writes r as one markdown table row.
func Row(w io.Writer, r *Report) {
	cpu := "–"
	if r.CPUPerQuery > 0 {
		cpu = fmt.Sprintf("%.2f", ms(r.CPUPerQuery))
	}
	var share []string
	for _, s := range Sources {
		if _, seen := r.SourceStatus[s]; !seen {
			share = append(share, "–")
			continue
		}
		share = append(share, fmt.Sprintf("%.1f %%", 100*r.SourceOK[s]))
	}
	tr := "none"
	switch {
	case r.TransitionsUnknown != "":
		tr = "unknown: " + r.TransitionsUnknown
	case len(r.Transitions) > 0:
		var parts []string
		for _, k := range slices.Sorted(mapsKeys(r.Transitions)) {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, r.Transitions[k]))
		}
		tr = strings.Join(parts, ", ")
	}
	label := r.Label
	if r.Missed > 0 {
		label += fmt.Sprintf(" (%d arrivals not sent: every client busy)", r.Missed)
	}
	fmt.Fprintf(w, "| %s | %d | %.0f | %.1f | %.1f | %s | %d | %d | %s | %s |\n",
		label, r.Requests, r.ReqPerSec, ms(r.P50), ms(r.P99), cpu, r.Non200+r.Errors, r.Partial,
		strings.Join(share, " | "), tr)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
