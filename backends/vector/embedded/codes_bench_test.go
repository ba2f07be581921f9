package embedded

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkCodesSweep scores 56 lists of 500 consecutive rows (about a
// probe's 28,000 rows at 1,000,000 documents) at random places in the
// codes of 1,000,000 rows of 384 dimensions, prefetching the row so many
// ahead (0: none; prefetchRows is what the probe uses), and the same rows
// again and again from the caches ("hot": the arithmetic alone).
func BenchmarkCodesSweep(b *testing.B) {
	const dim, nrows, listLen, nlists = 384, 1_000_000, 500, 56
	var c rowCodes
	defer c.free()
	codes := c.extend(nrows * dim)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range codes {
		codes[i] = int8(rng.IntN(255) - 127)
	}
	q := make([]int16, dim)
	for i := range q {
		q[i] = int16(rng.IntN(2000) - 1000)
	}
	starts := make([][]int, 1000)
	for i := range starts {
		for range nlists {
			starts[i] = append(starts[i], rng.IntN(nrows/listLen)*listLen)
		}
	}
	for _, ahead := range []int{0, 2, 4, 8} {
		b.Run(fmt.Sprintf("ahead=%d", ahead), func(b *testing.B) {
			var sink int32
			it := 0
			for b.Loop() {
				for _, s := range starts[it%len(starts)] {
					for r := s; r < s+listLen; r++ {
						var p *int8
						if ahead > 0 && r+ahead < nrows {
							p = &codes[(r+ahead)*dim]
						}
						sink += dotCodesAhead(q, codes[r*dim:(r+1)*dim], p)
					}
				}
				it++
			}
			_ = sink
		})
	}
	b.Run("hot", func(b *testing.B) {
		var sink int32
		for b.Loop() {
			for range nlists {
				for r := range listLen {
					sink += dotCodes(q, codes[r*dim:(r+1)*dim])
				}
			}
		}
		_ = sink
	})
}
