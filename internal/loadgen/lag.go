package loadgen

import (
	"context"
	"slices"
	"time"

	"github.com/ragd/ragd/ingest"
)

// LagSample is one reading of a server's change-log status (GET
// /v1/status/health's "log"): each kept store's lag, or the error of a
// reading that failed.
type LagSample struct {
	At     time.Duration // since the sampling started
	Stores []ingest.StoreLag
	Err    error
}

// SampleLag reads status every interval until ctx ends, the first reading
// at once, and returns the readings.
func SampleLag(ctx context.Context, every time.Duration, status func(context.Context) (*ingest.LogStatus, error)) []LagSample {
	var out []LagSample
	start := time.Now()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		st, err := status(ctx)
		if ctx.Err() != nil {
			return out
		}
		s := LagSample{At: time.Since(start), Err: err}
		if err == nil && st != nil {
			s.Stores = st.Stores
		}
		out = append(out, s)
		select {
		case <-ctx.Done():
			return out
		case <-t.C:
		}
	}
}

// StoreLagSummary is one store's lag over a run's readings.
type StoreLagSummary struct {
	Store string
	// Readings counts the readings that had the store (kept, not dormant).
	Readings int
	// Behind is the log sequences not yet applied, Seconds the age of the
	// oldest of them: the largest reading and the median.
	MaxBehind, P50Behind   uint64
	MaxSeconds, P50Seconds float64
	// Errors counts readings in which the store reported an apply error.
	Errors int
}

// SummariseLag summarises the readings per store, stores in name order;
// dormant stores (not kept current: nothing reads them) are left out. It
// also returns the readings that failed.
func SummariseLag(samples []LagSample) (stores []StoreLagSummary, failed int) {
	behind := map[string][]uint64{}
	secs := map[string][]float64{}
	errs := map[string]int{}
	for _, s := range samples {
		if s.Err != nil {
			failed++
			continue
		}
		for _, l := range s.Stores {
			if l.Dormant {
				continue
			}
			behind[l.Store] = append(behind[l.Store], l.Behind)
			secs[l.Store] = append(secs[l.Store], l.LagSeconds)
			if l.Error != "" {
				errs[l.Store]++
			}
		}
	}
	for _, name := range slices.Sorted(mapsKeys(behind)) {
		b, s := behind[name], secs[name]
		slices.Sort(b)
		slices.Sort(s)
		stores = append(stores, StoreLagSummary{
			Store: name, Readings: len(b), Errors: errs[name],
			MaxBehind: b[len(b)-1], P50Behind: b[median(len(b))],
			MaxSeconds: s[len(s)-1], P50Seconds: s[median(len(s))],
		})
	}
	return stores, failed
}

// median is the index of the median (nearest rank) of n sorted values.
func median(n int) int { return max((n+1)/2-1, 0) }

// Current reports whether every kept store of st has applied the whole log.
func Current(st *ingest.LogStatus) bool {
	for _, l := range st.Stores {
		if !l.Dormant && l.Behind > 0 {
			return false
		}
	}
	return true
}
