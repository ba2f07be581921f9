package idtable_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/ragd/ragd/internal/idtable"
)

// benchN is the ids a benchmark's table holds: ragd's 1M-document scale.
const benchN = 1_000_000

// benchIDs returns n document ids shaped as the scale runs make them
// ("d0000001": 8 bytes), in arrival order, and a random order of them
// for lookups.
func benchIDs(n int) (ids []string, shuffled []string) {
	ids = make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("d%07d", i)
	}
	shuffled = append([]string(nil), ids...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	return ids, shuffled
}

func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkBuild appends 1M ids to an empty table; heapB/id is the live
// heap the table holds afterwards (after a collection) per id, and
// footprintB/id what its arrays' capacities say.
func BenchmarkBuild(b *testing.B) {
	ids, _ := benchIDs(benchN)
	var heap, foot float64
	for b.Loop() {
		before := heapAlloc()
		var t idtable.Table
		for _, id := range ids {
			t.Append(id)
		}
		heap = float64(heapAlloc()-before) / benchN
		f := t.Footprint()
		foot = float64(f.Arena+f.Spans+f.Cells) / benchN
		runtime.KeepAlive(&t)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchN, "ns/id")
	b.ReportMetric(heap, "heapB/id")
	b.ReportMetric(foot, "footprintB/id")
}

// BenchmarkMapReference is BenchmarkBuild for a map[string]int32 holding
// the same ids as strings of their own: what the package doc compares
// the table with.
func BenchmarkMapReference(b *testing.B) {
	ids, _ := benchIDs(benchN)
	var heap float64
	for b.Loop() {
		before := heapAlloc()
		m := make(map[string]int32)
		for i, id := range ids {
			m[string([]byte(id))] = int32(i)
		}
		heap = float64(heapAlloc()-before) / benchN
		runtime.KeepAlive(m)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchN, "ns/id")
	b.ReportMetric(heap, "heapB/id")
}

func builtTable(ids []string) *idtable.Table {
	t := new(idtable.Table)
	for _, id := range ids {
		t.Append(id)
	}
	return t
}

// BenchmarkLookup looks up, in a table of 1M ids, ids it holds in random
// order (hit) and ids it does not hold (miss).
func BenchmarkLookup(b *testing.B) {
	ids, shuffled := benchIDs(benchN)
	t := builtTable(ids)
	b.Run("hit", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, ok := t.Lookup(shuffled[i]); !ok {
				b.Fatal("not found")
			}
			if i++; i == len(shuffled) {
				i = 0
			}
		}
	})
	b.Run("miss", func(b *testing.B) {
		miss := make([]string, 1<<16)
		for i := range miss {
			miss[i] = fmt.Sprintf("m%07d", i)
		}
		i := 0
		for b.Loop() {
			if _, ok := t.Lookup(miss[i&(len(miss)-1)]); ok {
				b.Fatal("found")
			}
			i++
		}
	})
}

// BenchmarkChurn replaces documents in a table of 1M ids as each backend
// does: the keyword postings unlink the old slot and append a new one
// (unlink), the vector index swap-removes the row and appends (swap);
// each op is one lookup, one removal and one append.
func BenchmarkChurn(b *testing.B) {
	ids, shuffled := benchIDs(benchN)
	for _, mode := range []string{"unlink", "swap"} {
		b.Run(mode, func(b *testing.B) {
			t := builtTable(ids)
			i := 0
			for b.Loop() {
				id := shuffled[i%benchN]
				e, ok := t.Lookup(id)
				if !ok {
					b.Fatal("not found")
				}
				if mode == "unlink" {
					t.Unlink(e)
				} else {
					t.SwapRemove(e)
				}
				t.Append(id)
				i++
			}
		})
	}
}
