package eval

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// Half names one half of a collection's queries. Defaults are tuned on
// TuneHalf only and reported on TestHalf, so that a quality claim holds on
// queries the tuning never saw.
type Half string

const (
	AllQueries Half = ""     // every judged query
	TuneHalf   Half = "tune" // queries whose id hashes even
	TestHalf   Half = "test" // queries whose id hashes odd
)

// QueryHalf is the half a query id belongs to: the low bit of the id's
// 32-bit FNV-1a hash, 0 for TuneHalf and 1 for TestHalf. It depends on the
// id alone, so it is fixed for a collection, needs no seed, and works for
// ids that are not numbers. On Cranfield it puts 113 queries in the tune
// half and 112 in the test half.
func QueryHalf(id string) Half {
	h := fnv.New32a()
	h.Write([]byte(id))
	if h.Sum32()&1 == 0 {
		return TuneHalf
	}
	return TestHalf
}

// ParseHalf reads "all" (or ""), "tune" or "test".
func ParseHalf(s string) (Half, error) {
	switch h := Half(strings.ToLower(strings.TrimSpace(s))); h {
	case "all", AllQueries:
		return AllQueries, nil
	case TuneHalf, TestHalf:
		return h, nil
	}
	return "", fmt.Errorf("eval: unknown query half %q (want all, tune or test)", s)
}

// Split returns ds restricted to the queries of half h (all of them for
// AllQueries). Corpus and judgments are shared, not copied.
func (ds *Dataset) Split(h Half) *Dataset {
	if h == AllQueries {
		return ds
	}
	out := *ds
	out.Queries = nil
	for _, q := range ds.Queries {
		if QueryHalf(q.ID) == h {
			out.Queries = append(out.Queries, q)
		}
	}
	out.Name = ds.Name + "/" + string(h)
	return &out
}
