package vecgen

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/ragd/ragd/internal/topk"
	"github.com/ragd/ragd/spi"
)

// exactBlock is how many documents one matrix product scores.
const exactBlock = 2048

// Exact is an exhaustive search of a stream of documents for many queries
// at once: each block of documents is scored against every query by one
// matrix product, and each query keeps its k most similar (cosine: the
// vectors are unit) overall and within each tenant, document i (0-based,
// in Add order) belonging to tenant i mod Tenants, as scripts/bench.sh
// spreads a corpus. Invariants: qm holds the queries row by row (len(qm)
// = len(queries)·dim); block holds the len(ids) documents added since the
// last flush (len(block) = len(ids)·dim ≤ exactBlock·dim).
type Exact struct {
	dim, k, tenants int
	exclude         []string
	qm              []float32
	all             []*topk.Refs
	byTenant        [][]*topk.Refs
	sumDist         []float64
	block           []float32
	ids             []string
	out             []float32
	n               int
}

// NewExact prepares an exhaustive search for queries (unit vectors of one
// dimension). exclude, when not nil, names per query a document id it
// must not return (a query that is itself a document: its nearest other).
func NewExact(queries [][]float32, exclude []string, k, tenants int) (*Exact, error) {
	if len(queries) == 0 {
		return nil, fmt.Errorf("vecgen: exact: no queries")
	}
	e := &Exact{dim: len(queries[0]), k: k, tenants: tenants, exclude: exclude}
	for i, q := range queries {
		if len(q) != e.dim {
			return nil, fmt.Errorf("vecgen: exact: query %d has dimension %d, not %d", i, len(q), e.dim)
		}
		e.qm = append(e.qm, q...)
		e.all = append(e.all, topk.New(k))
		ts := make([]*topk.Refs, tenants)
		for t := range ts {
			ts[t] = topk.New(k)
		}
		e.byTenant = append(e.byTenant, ts)
	}
	e.sumDist = make([]float64, len(queries))
	e.block = make([]float32, 0, exactBlock*e.dim)
	e.out = make([]float32, len(queries)*exactBlock)
	return e, nil
}

// Add offers the next document.
func (e *Exact) Add(id string, v []float32) error {
	if len(v) != e.dim {
		return fmt.Errorf("vecgen: exact: document %q has dimension %d, not %d", id, len(v), e.dim)
	}
	e.block = append(e.block, v...)
	e.ids = append(e.ids, id)
	if len(e.ids) == exactBlock {
		e.flush()
	}
	return nil
}

func (e *Exact) flush() {
	nb := len(e.ids)
	if nb == 0 {
		return
	}
	nq := len(e.all)
	c := blas32.General{Rows: nq, Cols: nb, Stride: nb, Data: e.out[:nq*nb]}
	blas32.Gemm(blas.NoTrans, blas.Trans, 1,
		blas32.General{Rows: nq, Cols: e.dim, Stride: e.dim, Data: e.qm},
		blas32.General{Rows: nb, Cols: e.dim, Stride: e.dim, Data: e.block}, 0, c)
	for q := range nq {
		row := c.Data[q*nb : (q+1)*nb]
		all, ts := e.all[q], e.byTenant[q]
		var sum float64
		for j, s := range row {
			sum += math.Sqrt(max(0, 2-2*float64(s)))
			if e.exclude != nil && e.ids[j] == e.exclude[q] {
				continue
			}
			r := spi.Ref{ID: e.ids[j], Score: float64(s)}
			all.Offer(r)
			if e.tenants > 0 {
				ts[(e.n+j)%e.tenants].Offer(r)
			}
		}
		e.sumDist[q] += sum
	}
	e.n += nb
	e.block, e.ids = e.block[:0], e.ids[:0]
}

// ExactResult is one query's exact answer.
type ExactResult struct {
	// All is the k most similar documents, best first; Tenants[t] the k
	// most similar of tenant t.
	All     []spi.Ref
	Tenants [][]spi.Ref
	// MeanDist is the mean Euclidean distance (of unit vectors) from the
	// query to every document: relative contrast's numerator.
	MeanDist float64
}

// Results ends the search and returns each query's answer, and the number
// of documents searched.
func (e *Exact) Results() ([]ExactResult, int) {
	e.flush()
	out := make([]ExactResult, len(e.all))
	for q := range out {
		out[q].All = e.all[q].Sorted()
		for _, t := range e.byTenant[q] {
			out[q].Tenants = append(out[q].Tenants, t.Sorted())
		}
		if e.n > 0 {
			out[q].MeanDist = e.sumDist[q] / float64(e.n)
		}
	}
	return out, e.n
}
