package embedded_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/vector/embedded"
	"github.com/ragd/ragd/internal/benchutil"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// BenchmarkCranfield: ingest and Retrieve p50/p99 at k=10 and k=100 on
// Cranfield, the same benchmark the PostgreSQL backend runs.
func BenchmarkCranfield(b *testing.B) {
	spitest.BenchVector(b, func(b *testing.B, dim int) spitest.VectorStore {
		return mustOpen(b, embedded.Config{Dir: b.TempDir(), Dimension: dim})
	})
}

// benchDim is all-MiniLM-L6-v2's dimension.
const benchDim = 384

// benchDirs caches the synthetic stores across benchmarks; TestMain's
// caller removes them.
var benchDirs = map[int]string{}

// syntheticStore returns the directory of a store holding n random
// 384-dimensional documents, 5% of them with metadata rare=yes, in three
// tenants. It is built once per process.
func syntheticStore(b *testing.B, n int) string {
	b.Helper()
	if dir, ok := benchDirs[n]; ok {
		return dir
	}
	dir, err := os.MkdirTemp("", "ragd-vector-bench-")
	if err != nil {
		b.Fatal(err)
	}
	s, err := embedded.Open(context.Background(), embedded.Config{Dir: dir, Dimension: benchDim})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(uint64(n), 1))
	batch := make([]spi.Document, 0, 2000)
	for i := range n {
		d := spi.Document{ID: fmt.Sprintf("d%07d", i), Tenant: fmt.Sprint("t", i%3), Vector: randVec(r, benchDim),
			Metadata: spi.Strings(map[string]string{"lang": "en"})}
		if i%20 == 0 {
			d.Metadata["rare"] = spi.String("yes")
		}
		batch = append(batch, d)
		if len(batch) == cap(batch) || i == n-1 {
			if err := s.Upsert(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	benchDirs[n] = dir
	return dir
}

func randVec(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// benchSizes are the collection sizes of BenchmarkRetrieve: 10k and 100k,
// or the comma-separated list in RAG_BENCH_VECTOR_SIZES (e.g. 1000000).
func benchSizes(b *testing.B) []int {
	v := os.Getenv("RAG_BENCH_VECTOR_SIZES")
	if v == "" {
		return []int{10_000, 100_000}
	}
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 10 {
			b.Fatalf("RAG_BENCH_VECTOR_SIZES: %q is not a size of at least 10", f)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// BenchmarkRetrieve: exact search latency at 10k and 100k (see benchSizes)
// 384-dimensional vectors, k=10, unfiltered, with a tenant (1/3 of rows), and with a filter
// matching 5%; p50/p99 in µs, and the process CPU time per search (which a
// loaded machine inflates less than latency).
func BenchmarkRetrieve(b *testing.B) {
	for _, n := range benchSizes(b) {
		for _, par := range []int{0, 1} {
			name := fmt.Sprintf("n=%d/par=%s", n, map[int]string{0: "auto", 1: "1"}[par])
			b.Run(name, func(b *testing.B) {
				s := mustOpen(b, embedded.Config{Dir: syntheticStore(b, n), Dimension: benchDim, Parallelism: par})
				cases := []struct {
					name string
					req  spi.VectorRequest
				}{
					{"k=10", spi.VectorRequest{K: 10}},
					{"k=100", spi.VectorRequest{K: 100}}, // the retriever's window
					{"k=10/tenant", spi.VectorRequest{K: 10, Tenant: "t1"}},
					{"k=10/filter5pct", spi.VectorRequest{K: 10, Filter: spi.StringFilter(map[string][]string{"rare": {"yes"}})}},
				}
				for _, c := range cases {
					b.Run(c.name, func(b *testing.B) {
						r := rand.New(rand.NewPCG(7, 7))
						qs := make([][]float32, 64)
						for i := range qs {
							qs[i] = randVec(r, benchDim)
						}
						var lat []time.Duration
						i := 0
						cpu0 := benchutil.CPUTime()
						for b.Loop() {
							req := c.req
							req.Vector = qs[i%len(qs)]
							start := time.Now()
							refs, err := s.Retrieve(context.Background(), req)
							lat = append(lat, time.Since(start))
							if err != nil || len(refs) != c.req.K {
								b.Fatalf("Retrieve = %d refs, %v", len(refs), err)
							}
							i++
						}
						b.ReportMetric(float64((benchutil.CPUTime()-cpu0).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
						benchutil.Percentiles(b, lat)
					})
				}
			})
		}
	}
}

// BenchmarkOpen: the time to open a store of 100k (or the largest of
// benchSizes) 384-dimensional vectors (decode every record into memory),
// i.e. the restart cost, and the heap the open store holds.
func BenchmarkOpen(b *testing.B) {
	n := slices.Max(append(benchSizes(b), 100_000))
	dir := syntheticStore(b, n)
	var heap uint64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s, err := embedded.Open(context.Background(), embedded.Config{Dir: dir, Dimension: benchDim})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = after.HeapAlloc - before.HeapAlloc
		if s.Len() != n {
			b.Fatalf("opened %d docs, want %d", s.Len(), n)
		}
		s.Close()
	}
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
	if st, err := os.Stat(filepath.Join(dir, embedded.FileName)); err == nil {
		b.ReportMetric(float64(st.Size())/(1<<20), "file-MiB")
	}
}

// BenchmarkRetrieveBesideWrites: k=10 searches while one writer commits
// batches of 16 rewritten documents (durable, fsynced) back to back: the
// search latency under writes and the commit rate the writer kept.
func BenchmarkRetrieveBesideWrites(b *testing.B) {
	for _, n := range benchSizes(b) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := mustOpen(b, embedded.Config{Dir: syntheticStore(b, n), Dimension: benchDim})
			r := rand.New(rand.NewPCG(7, 8))
			qs := make([][]float32, 64)
			for i := range qs {
				qs[i] = randVec(r, benchDim)
			}
			stop := make(chan struct{})
			done := make(chan int)
			go func() {
				w := rand.New(rand.NewPCG(9, 9))
				commits := 0
				defer func() { done <- commits }()
				for {
					select {
					case <-stop:
						return
					default:
					}
					batch := make([]spi.Document, 16)
					for j := range batch {
						i := w.IntN(n)
						batch[j] = spi.Document{ID: fmt.Sprintf("d%07d", i), Tenant: fmt.Sprint("t", i%3),
							Vector: randVec(w, benchDim), Metadata: spi.Strings(map[string]string{"lang": "en"})}
					}
					if err := s.Upsert(context.Background(), batch); err != nil {
						b.Error(err)
						return
					}
					commits++
				}
			}()
			var lat []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				refs, err := s.Retrieve(context.Background(), spi.VectorRequest{Vector: qs[i%len(qs)], K: 10})
				lat = append(lat, time.Since(start))
				if err != nil || len(refs) != 10 {
					b.Fatalf("Retrieve = %d refs, %v", len(refs), err)
				}
				i++
			}
			close(stop)
			commits := <-done
			b.ReportMetric(float64(commits)/b.Elapsed().Seconds(), "commits/s")
			b.ReportMetric(float64(embedded.Waits(s))/float64(b.N), "waits/op")
			benchutil.Percentiles(b, lat)
		})
	}
}

// BenchmarkANN: the embedded store at RAG_BENCH_ANN_SIZES documents
// (comma-separated; 100000 by default) of Synth points (embedding-shaped:
// internal/vecgen's mixtures of real sentence vectors with
// RAG_BENCH_POOL, see Synth), searched with real vectors of held-out
// texts: ingest rate, the files and heap per document, the IVF build
// time, then per search kind (RAG_BENCH_ANN_CASES, comma-separated names,
// limits them), at k = 10 and at the retriever's window k = 100,
// recall@k and recall@10 against the exact search of the same store,
// p50/p99 and CPU per query. The store is kept under RAG_BENCH_ANN_DIR
// (the system's temp directory by default) between runs; remove it by
// hand.
func BenchmarkANN(b *testing.B) {
	s := embedded.LoadSynth(b)
	sizes := []int{100_000}
	if v := os.Getenv("RAG_BENCH_ANN_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchANN(b, s, n) })
	}
}

func benchANN(b *testing.B, s *embedded.Synth, n int) {
	root := os.Getenv("RAG_BENCH_ANN_DIR")
	if root == "" {
		root = os.TempDir()
	}
	dir := filepath.Join(root, fmt.Sprintf("ragd-ann-%d-d%d-%s", n, s.Dim, s.Kind()))
	ctx := context.Background()
	if _, err := os.Stat(filepath.Join(dir, embedded.FileName)); err != nil {
		st, err := embedded.Open(ctx, embedded.Config{Dir: dir, Dimension: s.Dim, ANN: embedded.ANN{MinRows: -1}})
		if err != nil {
			b.Fatal(err)
		}
		start, cpu0 := time.Now(), benchutil.CPUTime()
		batch := make([]spi.Document, 0, 1000)
		for i := range n {
			v := make([]float32, s.Dim)
			top := s.Point(i, v)
			ten, md := embedded.SynthMeta(i, top)
			batch = append(batch, spi.Document{ID: fmt.Sprintf("d%07d", i), Tenant: ten, Metadata: md, Vector: v,
				Title: fmt.Sprintf("synthetic point %d", i)})
			if len(batch) == cap(batch) || i == n-1 {
				if err := st.Upsert(ctx, batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		el := time.Since(start)
		b.Logf("n=%d: ingest %.0f docs/s (durable batches of 1,000), %.1f µs CPU per document", n, float64(n)/el.Seconds(),
			float64((benchutil.CPUTime()-cpu0).Microseconds())/float64(n))
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
	}
	var probe float64
	if v := os.Getenv("RAG_BENCH_ANN_PROBE"); v != "" {
		probe, _ = strconv.ParseFloat(v, 64)
	}
	minRows := 0
	if v := os.Getenv("RAG_BENCH_ANN_MINROWS"); v != "" {
		minRows, _ = strconv.Atoi(v)
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	st := mustOpen(b, embedded.Config{Dir: dir, Dimension: s.Dim, ANN: embedded.ANN{MinRows: minRows, Probe: probe}})
	opened := time.Since(start)
	builds, ivf := embedded.WaitBuild(st)
	if v := os.Getenv("RAG_BENCH_ANN_DENSE"); v != "" {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			b.Fatal(err)
		}
		embedded.SetDenseProbe(st, x)
	}
	if v := os.Getenv("RAG_BENCH_ANN_FILTER_GROWTH"); v != "" {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			b.Fatal(err)
		}
		embedded.SetFilterGrowth(st, x)
	}
	built := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	if p := os.Getenv("RAG_BENCH_ANN_HEAPPROFILE"); p != "" {
		writeHeapProfile(b, p)
	}
	fi, err := os.Stat(st.Path())
	if err != nil {
		b.Fatal(err)
	}
	vi, err := os.Stat(filepath.Join(dir, embedded.VectorFileName))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("n=%d (%s): open %v, IVF %v (builds %d) after %v; heap %.1f MiB (%.0f B/doc); bbolt file %.1f MiB (%.0f B/doc), vectors file %.1f MiB (%.0f B/doc)",
		n, s.Kind(), opened, ivf, builds, built,
		float64(m1.HeapAlloc-m0.HeapAlloc)/(1<<20), float64(m1.HeapAlloc-m0.HeapAlloc)/float64(n),
		float64(fi.Size())/(1<<20), float64(fi.Size())/float64(n), float64(vi.Size())/(1<<20), float64(vi.Size())/float64(n))
	cases := []struct {
		name string
		req  spi.VectorRequest
	}{
		{"all", spi.VectorRequest{}},
		{"tenant50", spi.VectorRequest{Tenant: "t0"}},
		{"tenant5", spi.VectorRequest{Tenant: "t3"}},
		{"tenant1", spi.VectorRequest{Tenant: "t4"}},
		{"half50", spi.VectorRequest{Filter: spi.StringFilter(map[string][]string{"half": {"yes"}})}},
		{"rare5", spi.VectorRequest{Filter: spi.StringFilter(map[string][]string{"rare": {"yes"}})}},
		{"topic5", spi.VectorRequest{Filter: spi.StringFilter(map[string][]string{"topic": {"k3"}})}},
		{"tenant50+half50", spi.VectorRequest{Tenant: "t0", Filter: spi.StringFilter(map[string][]string{"half": {"yes"}})}},
	}
	if v := os.Getenv("RAG_BENCH_ANN_CASES"); v != "" {
		cases = slices.DeleteFunc(cases, func(c struct {
			name string
			req  spi.VectorRequest
		}) bool {
			return !slices.Contains(strings.Split(v, ","), c.name)
		})
	}
	// RAG_BENCH_ANN_KGROWTH: the k = 100 search again at each of these
	// kGrowth values (comma-separated), the shipped one restored after.
	var kgrowths []float64
	if v := os.Getenv("RAG_BENCH_ANN_KGROWTH"); v != "" {
		for _, f := range strings.Split(v, ",") {
			x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				b.Fatal(err)
			}
			kgrowths = append(kgrowths, x)
		}
	}
	for _, c := range cases {
		type variant struct {
			k    int
			name string
			set  func()
		}
		vs := []variant{{10, "k=10", nil}, {100, "k=100", nil}} // k = 100: the retriever's window
		if c.name == "all" {
			for _, g := range kgrowths {
				vs = append(vs, variant{100, fmt.Sprintf("k=100/kgrowth=%g", g), func() { embedded.SetKGrowth(st, g) }})
			}
		}
		for _, vr := range vs {
			k := vr.k
			if vr.set != nil {
				vr.set()
			}
			b.Run(fmt.Sprintf("%s/%s", c.name, vr.name), func(b *testing.B) {
				want := make([][]spi.Ref, len(s.Queries))
				exact0 := benchutil.CPUTime()
				for i, q := range s.Queries {
					req := c.req
					req.Vector, req.K = q, k
					if want[i], err = embedded.ExactRetrieve(st, req); err != nil {
						b.Fatal(err)
					}
				}
				exactCPU := float64((benchutil.CPUTime() - exact0).Microseconds()) / 1e3 / float64(len(s.Queries))
				var lat []time.Duration
				hits, total, hits10, total10, i := 0, 0, 0, 0, 0
				cpu0 := benchutil.CPUTime()
				for b.Loop() {
					req := c.req
					req.Vector, req.K = s.Queries[i%len(s.Queries)], k
					t0 := time.Now()
					refs, err := st.Retrieve(ctx, req)
					lat = append(lat, time.Since(t0))
					if err != nil {
						b.Fatal(err)
					}
					w := want[i%len(s.Queries)]
					for _, w := range w {
						if slices.ContainsFunc(refs, func(r spi.Ref) bool { return r.ID == w.ID }) {
							hits++
						}
					}
					total += len(w)
					// The top 10 of a larger k (the retriever's window):
					// what recall@10 through the API measures.
					top, wtop := refs[:min(10, len(refs))], w[:min(10, len(w))]
					for _, w := range wtop {
						if slices.ContainsFunc(top, func(r spi.Ref) bool { return r.ID == w.ID }) {
							hits10++
						}
					}
					total10 += len(wtop)
					i++
				}
				b.ReportMetric(float64((benchutil.CPUTime()-cpu0).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
				b.ReportMetric(exactCPU, "exact-cpu-ms/op")
				b.ReportMetric(float64(hits)/float64(max(total, 1)), fmt.Sprintf("recall@%d", k))
				if k > 10 {
					b.ReportMetric(float64(hits10)/float64(max(total10, 1)), "recall@10")
				}
				benchutil.Percentiles(b, lat)
			})
			embedded.SetKGrowth(st, embedded.DefaultKGrowth)
		}
	}
}

// writeHeapProfile writes the heap profile (in use after the last GC) to
// path, for go tool pprof -sample_index=inuse_space.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}
