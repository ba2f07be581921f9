package spitest

import (
	"slices"
	"testing"

	"github.com/ragd/ragd/spi"
)

// IDs returns the ids of refs, in order.
func IDs(refs []spi.Ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

// WantIDs fails tb unless refs hold exactly want, in order.
func WantIDs(tb testing.TB, refs []spi.Ref, want ...string) {
	tb.Helper()
	if got := IDs(refs); !slices.Equal(got, want) {
		tb.Fatalf("ids = %v, want %v (refs %v)", got, want, refs)
	}
}

// CheckOrder fails tb unless refs all come from source and are ordered
// as every source orders them: score descending, ties by ascending id.
func CheckOrder(tb testing.TB, refs []spi.Ref, source string) {
	tb.Helper()
	for i, r := range refs {
		if r.Source != source {
			tb.Fatalf("ref %s has Source %q, want %q", r.ID, r.Source, source)
		}
		if i > 0 {
			p := refs[i-1]
			if r.Score > p.Score || r.Score == p.Score && r.ID <= p.ID {
				tb.Fatalf("refs out of order at %d: %v", i, refs)
			}
		}
	}
}
