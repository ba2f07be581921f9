package keyword

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/ragd/ragd/eval"
	"github.com/ragd/ragd/internal/benchutil"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

// BenchmarkImpactSearch: the in-memory postings alone (no bleve), on
// Cranfield and, when RAG_BENCH_KEYWORD_CORPUS names a JSONL corpus (from
// ../shared/tools/synth_corpus.py), on its first RAG_BENCH_KEYWORD_DOCS
// documents (default all): Cranfield's 225 queries round-robin (each query
// new to the index: nothing is cached between queries), k = 10 and 100,
// reporting latency p50/p99, process CPU per query and the load average
// (load1, over the last minute, at the end of the run); with
// RAG_BENCH_KEYWORD_QUERIES naming a JSONL file of {"text"} lines (the
// queries of scripts/bench.sh scale, queries-mixed.jsonl in its cache),
// those queries instead of Cranfield's. Layouts: "1tenant"
// (every document and query in tenant acme, a single-tenant deployment),
// "3tenants" (document i in tenant t(i mod 3), with metadata part = i mod
// 20, slice = i mod 100 and cell = i mod 1000; queries for t1, for every
// tenant, and for every tenant with the filters part = 7, slice = 7 and
// cell = 7, 5%, 1% and 0.1% of the documents); RAG_BENCH_KEYWORD_LAYOUTS
// (comma-separated) picks some. With RAG_BENCH_KEYWORD_EXHAUSTIVE set,
// the exhaustive oracle runs beside the pruned search. The index is
// searched in clustered order, as a rebuild leaves it (reorder.go);
// with RAG_BENCH_KEYWORD_ARRIVAL set, in arrival order (the corpus's);
// RAG_BENCH_KEYWORD_ORDERS (comma-separated: "bisect", "plain" for the
// order without the bisection of bisect.go) rebuilds in each order in
// turn and searches each, logging how well it groups the corpus's
// near-copies (copyRuns).
// Each query runs as the index searches it ("pruned": workers at once
// from parallelMin slots, prune.go) and by one worker ("pruned1");
// "windows" and "windows1" never look candidates up one by one, "cands"
// always does (fewCandidates decides in the others); a mode
// with a suffix @N searches ranges of N slots (a multiple of 64; @1: one
// range, no ordering), one with ~N before it windows of at least N
// slots (~1: each to the first block's end).
// RAG_BENCH_KEYWORD_MODES (comma-separated, repeats allowed, e.g.
// "pruned1,pruned,pruned1,pruned") picks modes and their order, so that
// variants compare side by side in one run; RAG_BENCH_KEYWORD_K
// (comma-separated) picks k; with
// RAG_BENCH_KEYWORD_CPUPROFILE naming a directory, the timed searches of
// each corpus and layout are profiled there (cpuProfile). With
// RAG_BENCH_LOCK naming a lock file, the timed runs hold it (flock) and
// log the load average; the corpus loads before.
//
// It also reports the index's Go heap per document (after a GC, less the
// heap before it was built) and logs where the bytes go. The heap figure
// holds for the first layout a run builds: the sub-benchmarks of an
// earlier layout may keep its index reachable.
func BenchmarkImpactSearch(b *testing.B) {
	ds, err := eval.LoadBEIR(spitest.CranfieldDir(b), "test")
	if err != nil {
		b.Fatal(err)
	}
	idx, err := createIndex(b.TempDir()+"/idx", Config{Analyzer: "en"}.withDefaults())
	if err != nil {
		b.Fatal(err)
	}
	defer idx.Close()
	an := idx.Mapping().AnalyzerNamed("en")
	texts := make([]string, len(ds.Queries))
	for i, q := range ds.Queries {
		texts[i] = q.Text
	}
	if path := os.Getenv("RAG_BENCH_KEYWORD_QUERIES"); path != "" {
		texts = benchutil.Texts(b, path)
	}
	queries := make([][]string, len(texts))
	for i, t := range texts {
		for _, tok := range an.Analyze([]byte(t)) {
			queries[i] = append(queries[i], string(tok.Term))
		}
	}
	type corpus struct {
		name string
		each func(func(spi.Document))
	}
	corpora := []corpus{{"cranfield", func(fn func(spi.Document)) {
		for _, d := range ds.Corpus {
			fn(d)
		}
	}}}
	if path := os.Getenv("RAG_BENCH_KEYWORD_CORPUS"); path != "" {
		limit := benchutil.EnvInt(b, "RAG_BENCH_KEYWORD_DOCS", -1)
		corpora = append(corpora, corpus{fmt.Sprintf("synth%s", docsName(limit)), func(fn func(spi.Document)) {
			benchutil.EachDocument(b, path, limit, fn)
		}})
	}
	exhaustive := os.Getenv("RAG_BENCH_KEYWORD_EXHAUSTIVE") != ""
	layouts := []string{"1tenant", "3tenants"}
	if v := os.Getenv("RAG_BENCH_KEYWORD_LAYOUTS"); v != "" {
		layouts = strings.Split(v, ",")
	}
	modes := []string{"pruned", "pruned1", "exhaustive"}
	if v := os.Getenv("RAG_BENCH_KEYWORD_MODES"); v != "" {
		modes = strings.Split(v, ",")
	}
	ks := []int{10, 100}
	if v := os.Getenv("RAG_BENCH_KEYWORD_K"); v != "" {
		ks = nil
		for _, f := range strings.Split(v, ",") {
			k, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal(err)
			}
			ks = append(ks, k)
		}
	}
	p := bm25Params{k1: DefaultK1, b: DefaultB, titleWeight: DefaultTitleBoost}
	for _, corp := range corpora {
		for _, layout := range layouts {
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			x := newImpactIndex()
			n := 0
			batch := make([]spi.Document, 0, 1024)
			flush := func() {
				built, lens := buildDocs(batch, an)
				for i, d := range batch {
					x.putLocked(d.ID, d.Tenant, d.Metadata, lens[i], nil, freqsOf(built[i]), nil)
				}
				batch = batch[:0]
			}
			corp.each(func(d spi.Document) {
				d.Tenant = "acme"
				if layout == "3tenants" {
					d.Tenant = fmt.Sprint("t", n%3)
					d.Metadata = spi.Strings(map[string]string{"part": strconv.Itoa(n % 20), "slice": strconv.Itoa(n % 100), "cell": strconv.Itoa(n % 1000)})
				}
				n++
				batch = append(batch, d)
				if len(batch) == cap(batch) {
					flush()
				}
			})
			flush()
			for i := range x.post {
				x.post[i].trim()
			}
			// Clustered order, as a rebuild leaves it (reorder.go), or
			// the orders RAG_BENCH_KEYWORD_ORDERS names in turn
			// ("bisect", "plain": without the bisection); arrival order
			// with RAG_BENCH_KEYWORD_ARRIVAL set.
			orders := []string{""}
			if os.Getenv("RAG_BENCH_KEYWORD_ARRIVAL") != "" {
				orders = []string{"arrival"}
			} else if v := os.Getenv("RAG_BENCH_KEYWORD_ORDERS"); v != "" {
				orders = strings.Split(v, ",")
			}
			var after runtime.MemStats
			for oi, ord := range orders {
				if ord != "arrival" {
					x.noBisect = ord == "plain"
					start, cpu0 := time.Now(), benchutil.CPUTime()
					x.rebuildNow()
					b.Logf("%s/%s: rebuilt in clustered order %q in %v (%v of CPU); %s", corp.name, layout, ord,
						time.Since(start).Round(time.Millisecond), (benchutil.CPUTime() - cpu0).Round(time.Millisecond), x.copyRuns())
				}
				if oi == 0 {
					runtime.GC()
					runtime.ReadMemStats(&after)
					b.Logf("%s/%s: %d documents, %.0f bytes of heap per document; by part (bytes per document):\n%s",
						corp.name, layout, n, float64(after.HeapAlloc-before.HeapAlloc)/float64(n), x.memoryTable())
				}
				order := ""
				if len(orders) > 1 {
					order = "/" + ord
				}
				type run struct {
					tenant string
					filter spi.Filter
					share  string // of the documents the filter passes
				}
				runs := []run{{tenant: "acme"}}
				if layout == "3tenants" {
					runs = []run{{tenant: "t1"}, {}, {filter: spi.StringFilter(map[string][]string{"part": {"7"}}), share: "5%"},
						{filter: spi.StringFilter(map[string][]string{"slice": {"7"}}), share: "1%"},
						{filter: spi.StringFilter(map[string][]string{"cell": {"7"}}), share: "0.1%"}}
				}
				unlock := heavyLock(b)
				stopProfile := cpuProfile(b, corp.name+"-"+layout+strings.ReplaceAll(order, "/", "-"))
				for _, r := range runs {
					for _, k := range ks {
						for _, mode := range modes {
							if mode == "exhaustive" && !exhaustive {
								continue
							}
							// pruned: workers at once on a large index (one a
							// core); pruned1: one worker; a suffix @N sets the
							// ranges' size to N slots (@1 for a single range),
							// ~N before it the windows' least size (~1: to the
							// first block's end).
							base, size, _ := strings.Cut(mode, "@")
							base, mw, _ := strings.Cut(base, "~")
							x.parallelMin, x.rangeMin, x.minWin, x.candidates = 0, 0, 0, 0
							if n, err := strconv.Atoi(mw); err == nil {
								x.minWin = n
							}
							switch base {
							case "pruned1":
								x.parallelMin = math.MaxInt
							case "windows1":
								x.parallelMin, x.candidates = math.MaxInt, -1
							case "windows":
								x.candidates = -1
							case "cands":
								x.candidates = 1
							}
							if n, err := strconv.Atoi(size); err == nil {
								x.rangeMin = n
								if n == 1 {
									x.rangeMin = 1 << 40
								}
							}
							name := fmt.Sprintf("%s/%s/tenant=%s/k=%d/%s%s", corp.name, layout, cmp.Or(r.tenant, "any"), k, mode, order)
							if !r.filter.IsEmpty() {
								name = fmt.Sprintf("%s/%s/filter=%s/k=%d/%s%s", corp.name, layout, r.share, k, mode, order)
							}
							b.Run(name, func(b *testing.B) {
								pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("mode", mode)))
								defer pprof.SetGoroutineLabels(context.Background())
								var lat []time.Duration
								i := 0
								cpu0 := benchutil.CPUTime()
								for b.Loop() {
									q := queries[i%len(queries)]
									i++
									start := time.Now()
									if mode == "exhaustive" {
										x.searchExhaustive(q, k, r.tenant, r.filter, p)
									} else if _, err := x.search(context.Background(), q, k, r.tenant, r.filter, p); err != nil {
										b.Fatal(err)
									}
									lat = append(lat, time.Since(start))
								}
								b.ReportMetric(float64((benchutil.CPUTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
								benchutil.Percentiles(b, lat)
								if l, ok := load1(); ok {
									b.ReportMetric(l, "load1")
								}
							})
						}
					}
				}
				stopProfile()
				unlock()
			}
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heap-B/doc-"+layout)
			runtime.KeepAlive(x)
		}
	}
}

// copyRuns says how well the order groups the synthetic corpus's
// near-copies (copyLayout). Only the benchmark knows the sources.
func (x *impactIndex) copyRuns() string {
	runs, ranges, sources := x.copyLayout()
	tenantRuns, prev := 0, uint32(math.MaxUint32)
	for s := range x.slots() {
		if t := x.tenant[s]; t != prev {
			tenantRuns, prev = tenantRuns+1, t
		}
	}
	return fmt.Sprintf("a source's copies lie in %.1f runs across %.1f ranges of 16,384 slots (%d sources); %d tenant runs", runs, ranges, sources, tenantRuns)
}

// cpuProfile starts a CPU profile of the timed searches when
// RAG_BENCH_KEYWORD_CPUPROFILE names a directory: name.pprof there, its
// samples labelled with the mode (pprof -tagfocus mode=pruned1). It
// returns the stop.
func cpuProfile(b *testing.B, name string) func() {
	dir := os.Getenv("RAG_BENCH_KEYWORD_CPUPROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name+".pprof"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}
}

// heavyLock takes the lock file RAG_BENCH_LOCK names (flock, exclusive),
// when set, so that timed runs of several processes on one machine do not
// overlap; loading the corpus runs before it. It returns the release.
func heavyLock(b *testing.B) func() {
	path := os.Getenv("RAG_BENCH_LOCK")
	if path == "" {
		return func() {}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		b.Fatal(err)
	}
	b.Logf("locked %s at %s; %s", path, time.Now().UTC().Format(time.TimeOnly), loadAvg())
	return func() {
		b.Logf("unlocked at %s; %s", time.Now().UTC().Format(time.TimeOnly), loadAvg())
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}
}

// loadFields is the machine's load averages over 1, 5 and 15 minutes, as
// /proc/loadavg gives them (nil when it cannot be read).
func loadFields() []string {
	raw, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(raw)); err == nil && len(f) >= 3 {
		return f[:3]
	}
	return nil
}

func loadAvg() string {
	if f := loadFields(); f != nil {
		return "load average " + strings.Join(f, " ")
	}
	return "load average unknown"
}

// load1 is the machine's load average over the last minute.
func load1() (float64, bool) {
	f := loadFields()
	if f == nil {
		return 0, false
	}
	l, err := strconv.ParseFloat(f[0], 64)
	return l, err == nil
}

func docsName(limit int) string {
	switch {
	case limit < 0:
		return "all"
	case limit%1_000_000 == 0:
		return fmt.Sprintf("%dM", limit/1_000_000)
	default:
		return fmt.Sprintf("%dk", limit/1000)
	}
}

// memoryTable says where the index's heap goes, per live document: the
// capacity of every array, and estimates for Go maps (their entries'
// size over a load of 13/16, plus the strings they hold).
func (x *impactIndex) memoryTable() string {
	n := float64(max(1, x.live))
	parts := map[string]float64{}
	ids := x.ids.Footprint()
	parts["ids: arena"] = float64(ids.Arena)
	parts["ids: spans"] = float64(ids.Spans)
	parts["ids: hash table"] = float64(ids.Cells)
	parts["tenant"] = float64(4 * cap(x.tenant))
	parts["lengths (title, text)"] = float64(8 * cap(x.lens))
	parts["version (tag, number)"] = float64(4*cap(x.verTag) + 8*cap(x.verSeq))
	parts["metadata (offsets, pair ids)"] = float64(4*cap(x.metaOff) + 4*cap(x.metaIDs))
	parts["alive bits"] = float64(8 * cap(x.alive))
	var blocks, data, tail, npost int
	for i := range x.post {
		p := &x.post[i]
		npost += p.count()
		blocks += cap(p.blocks)
		data += cap(p.data)
		tail += cap(p.tail)
	}
	parts["postings: packed words"] = float64(8 * data)
	parts["postings: block headers and bounds"] = float64(int(unsafe.Sizeof(block{})) * blocks)
	parts["postings: unpacked tails"] = float64(8 * tail)
	parts["postings: per-term headers"] = float64(int(unsafe.Sizeof(postings{})) * cap(x.post))
	var termBytes int
	for t := range x.termIdx {
		termBytes += 16 + 4 + len(t)
	}
	parts["term dictionary (map)"] = float64(termBytes) * 16 / 13
	parts["per-tenant df (map)"] = float64(12*len(x.tdf)) * 16 / 13
	var bm uint64
	for _, b := range append(slices.Clone(x.tBits), x.pairBits...) {
		bm += b.GetSizeInBytes()
	}
	parts["tenant and metadata bitmaps"] = float64(bm)
	keys := make([]string, 0, len(parts))
	total := 0.0
	for k, v := range parts {
		keys = append(keys, k)
		total += v
	}
	sort.Slice(keys, func(i, j int) bool { return parts[keys[i]] > parts[keys[j]] })
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "| %s | %.1f |\n", k, parts[k]/n)
	}
	fmt.Fprintf(&sb, "| total counted | %.1f |\n", total/n)
	fmt.Fprintf(&sb, "(%d postings, %.1f per document, %.2f bytes per posting packed; %d terms)\n",
		npost, float64(npost)/n, float64(8*data+int(unsafe.Sizeof(block{}))*blocks+8*tail)/float64(max(1, npost)), len(x.post))
	return sb.String()
}
