package retriever_test

// Benchmarks 2 and 3 of issue 4 on the real stack (pgvector, bleve, Neo4j;
// hashing embedder; full Cranfield corpus). They report latency
// distributions with b.ReportMetric rather than ns/op, which is suppressed:
//
//	eval "$(scripts/services.sh env)"
//	go test -run '^$' -bench 'RealStack' -benchtime 1x -count 5 ./retriever/
//
// See docs/resilience.md for the figures.

import (
	"context"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/eval"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

const (
	// rsBenchDocs: the whole Cranfield corpus (1,398 documents with text).
	rsBenchDocs = 1400
	// rsBenchWarmup queries run untimed on each stack first.
	rsBenchWarmup = 30
	// rsBenchSamples is the number of timed queries per phase.
	rsBenchSamples = 200
)

// timedRetrieve runs q and returns its wall time; a failed query fails
// the benchmark (every phase must keep answering).
func timedRetrieve(b *testing.B, r *retriever.HybridRetriever, q retriever.Query) (time.Duration, *retriever.Result) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	res, err := r.Retrieve(ctx, q)
	d := time.Since(start)
	if err != nil {
		b.Fatalf("Retrieve: %v", err)
	}
	return d, res
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// reportLatency reports p50 and p99 of ds in milliseconds as name-p50-ms
// and name-p99-ms, and returns the p99.
func reportLatency(b *testing.B, name string, ds []time.Duration) time.Duration {
	p50, p99 := eval.Percentile(ds, 50), eval.Percentile(ds, 99)
	b.ReportMetric(ms(p50), name+"-p50-ms")
	b.ReportMetric(ms(p99), name+"-p99-ms")
	return p99
}

// BenchmarkRealStackBlackhole is benchmark 2: one source is blackholed
// through a fault proxy — connections accepted, never answered. One run
// measures three phases with the production defaults (1 s source deadline,
// 500 ms hydration deadline, 2 s budget, breaker tripping after 5
// consecutive failures):
//
//  1. healthy: every source answers;
//  2. blackholed, breaker still closed: each query waits for the source's
//     deadline until the breaker trips;
//  3. blackholed, breaker open: the source is skipped without a goroutine.
//
// The goal is an open-phase p99 within 1.1x of the healthy p99
// (open/healthy-p99). Phase 3 queries alternate with queries to a second,
// identical stack whose source stays healthy (ref), so the ratio can also
// be read against a reference measured under the same machine load
// (open/ref-p99). The breaker's open period is long enough that no
// half-open trial falls into phase 3.
//
// Sub-benchmarks: graph blackholes Neo4j; postgres blackholes PostgreSQL
// (an open circuit skips the system of record as a hydrator too, the next
// store covers).
func BenchmarkRealStackBlackhole(b *testing.B) {
	c := loadRSCorpus(b, rsBenchDocs)
	for _, tc := range []struct {
		name   string
		source string
	}{
		{"graph", spi.SourceGraph},
		{"postgres", spi.SourceVector},
	} {
		b.Run(tc.name, func(b *testing.B) { benchBlackhole(b, c, tc.source) })
	}
}

func benchBlackhole(b *testing.B, c *rsCorpus, source string) {
	tune := func(cfg *breaker.Config) {
		cfg.FailureThreshold = breaker.DefaultConfig().FailureThreshold
		cfg.ResetTimeout = time.Hour
	}
	o := rsStackOptions{Tune: tune}
	faulty, ref := c.newStack(b, o), c.newStack(b, o)
	proxy, br := faulty.neoProxy, faulty.gb
	if source == spi.SourceVector {
		proxy, br = faulty.pgProxy, faulty.vb
	}
	defer proxy.Pass() // let the drivers close their connections cleanly
	query := func(i int) retriever.Query {
		return retriever.Query{Text: c.queries[i%len(c.queries)], Tenant: c.tenant}
	}
	for i := range rsBenchWarmup {
		timedRetrieve(b, faulty.r, query(i))
		timedRetrieve(b, ref.r, query(i))
	}

	var healthy, preTrip, open, refOpen []time.Duration
	preMissing, openMissing, notSkipped := 0, 0, 0
	b.ResetTimer()
	for range b.N {
		proxy.Pass()
		br.ForceClose()
		for i := range rsBenchWarmup / 3 { // fresh connections after a previous round
			timedRetrieve(b, faulty.r, query(i))
		}

		// Phase 1: healthy.
		for i := range rsBenchSamples {
			d, res := timedRetrieve(b, faulty.r, query(i))
			if res.Degraded {
				b.Fatalf("healthy phase degraded:%s", describeSources(res.Sources))
			}
			healthy = append(healthy, d)
		}

		// Phase 2: blackholed until the breaker trips.
		proxy.Blackhole()
		for i := 0; br.State() != breaker.Open; i++ {
			if i == 100 {
				b.Fatalf("%s breaker still %v after 100 blackholed queries", source, br.State())
			}
			d, res := timedRetrieve(b, faulty.r, query(i))
			if st := res.Sources[source].Status; st != retriever.StatusTimeout {
				b.Fatalf("blackholed %s = %+v, want timeout", source, res.Sources[source])
			}
			preTrip = append(preTrip, d)
			preMissing += len(res.Missing)
		}

		// Phase 3: breaker open; interleaved with the healthy reference,
		// alternating which goes first.
		for i := range rsBenchSamples {
			var d, dr time.Duration
			var res *retriever.Result
			if i%2 == 0 {
				d, res = timedRetrieve(b, faulty.r, query(i))
				dr, _ = timedRetrieve(b, ref.r, query(i))
			} else {
				dr, _ = timedRetrieve(b, ref.r, query(i))
				d, res = timedRetrieve(b, faulty.r, query(i))
			}
			if res.Sources[source].Status != retriever.StatusCircuitOpen {
				notSkipped++
			}
			open = append(open, d)
			refOpen = append(refOpen, dr)
			openMissing += len(res.Missing)
		}
	}
	b.StopTimer()

	if notSkipped > 0 {
		b.Fatalf("%d phase-3 queries called the blackholed %s (breaker not open)", notSkipped, source)
	}
	b.ReportMetric(0, "ns/op")
	hp99 := reportLatency(b, "healthy", healthy)
	reportLatency(b, "pretrip", preTrip)
	op99 := reportLatency(b, "open", open)
	rp99 := reportLatency(b, "ref", refOpen)
	b.ReportMetric(float64(len(preTrip))/float64(b.N), "pretrip-queries")
	b.ReportMetric(float64(preMissing)/float64(len(preTrip)), "pretrip-missing/query")
	b.ReportMetric(float64(openMissing)/float64(len(open)), "open-missing/query")
	b.ReportMetric(float64(op99)/float64(hp99), "open/healthy-p99")
	b.ReportMetric(float64(op99)/float64(rp99), "open/ref-p99")
}

// BenchmarkRealStackFanOut is benchmark 3: the retriever's concurrent
// stage 1 (embed + vector, keyword, graph at once, then RRF) against a
// sequential baseline calling the same breaker-wrapped sources one after
// another with the same requests, then FuseRRF. Stage 2 and hydration are
// off in both, since they are sequential either way. The two alternate
// query by query so machine load hits both alike. seq-*-ms are the
// sequential baseline's mean per-source times (vector includes embedding)
// and their sum; max-source-ms is the concurrent run's mean slowest
// source, the floor for the concurrent time.
func BenchmarkRealStackFanOut(b *testing.B) {
	c := loadRSCorpus(b, rsBenchDocs)
	off := false
	s := c.newStack(b, rsStackOptions{Defaults: retriever.Defaults{Expand: retriever.ExpandOptions{Enabled: &off}}})
	// The stack's retriever hydrates; this one, over the same sources,
	// does not, so both sides do the same work.
	r, err := retriever.New(retriever.Config{
		Vector: s.vectorSrc, Keyword: s.keywordSrc, Graph: s.graphSrc, Embedder: c.emb,
		Defaults: retriever.Defaults{Expand: retriever.ExpandOptions{Enabled: &off}},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// sequential returns its wall time, its page and each source's time.
	sequential := func(text string) (time.Duration, []retriever.Fused, [3]time.Duration) {
		start := time.Now()
		vecs, err := c.emb.Embed(ctx, []string{text})
		if err != nil {
			b.Fatal(err)
		}
		v, err := s.vectorSrc.Retrieve(ctx, spi.VectorRequest{Vector: vecs[0], K: retriever.DefaultWindow, Tenant: c.tenant})
		if err != nil {
			b.Fatal(err)
		}
		tv := time.Since(start)
		k, err := s.keywordSrc.Retrieve(ctx, spi.KeywordRequest{Text: text, K: retriever.DefaultWindow, Tenant: c.tenant})
		if err != nil {
			b.Fatal(err)
		}
		tk := time.Since(start) - tv
		g, err := s.graphSrc.MatchEntities(ctx, spi.KeywordRequest{Text: text, K: retriever.DefaultWindow, Tenant: c.tenant})
		if err != nil {
			b.Fatal(err)
		}
		tg := time.Since(start) - tv - tk
		fused := retriever.FuseRRF([]retriever.RankedList{
			{Source: spi.SourceVector, Weight: 1, Refs: v},
			{Source: spi.SourceKeyword, Weight: 1, Refs: k},
			{Source: spi.SourceGraph, Weight: 1, Refs: g},
		}, retriever.DefaultRRFK)
		return time.Since(start), fused[:min(10, len(fused))], [3]time.Duration{tv, tk, tg}
	}
	concurrent := func(text string) (time.Duration, *retriever.Result) {
		return timedRetrieve(b, r, retriever.Query{Text: text, Tenant: c.tenant})
	}
	for i := range rsBenchWarmup {
		sequential(c.queries[i%len(c.queries)])
		concurrent(c.queries[i%len(c.queries)])
	}

	var conc, seq []time.Duration
	var perSource [3]time.Duration
	var maxSource time.Duration
	b.ResetTimer()
	for i := range b.N * rsBenchSamples {
		text := c.queries[i%len(c.queries)]
		var dc, ds time.Duration
		var srcs [3]time.Duration
		var res *retriever.Result
		var page []retriever.Fused
		if i%2 == 0 {
			dc, res = concurrent(text)
			ds, page, srcs = sequential(text)
		} else {
			ds, page, srcs = sequential(text)
			dc, res = concurrent(text)
		}
		if res.Degraded || len(res.Hits) != len(page) {
			b.Fatalf("concurrent run degraded or differs in size:%s", describeSources(res.Sources))
		}
		for j, h := range res.Hits {
			if h.ID != page[j].ID {
				b.Fatalf("query %d rank %d: concurrent %s, sequential %s", i, j+1, h.ID, page[j].ID)
			}
		}
		slowest := 0.0
		for _, name := range []string{spi.SourceVector, spi.SourceKeyword, spi.SourceGraph} {
			slowest = max(slowest, res.Sources[name].TookMS)
		}
		maxSource += time.Duration(slowest * float64(time.Millisecond))
		for j := range perSource {
			perSource[j] += srcs[j]
		}
		conc = append(conc, dc)
		seq = append(seq, ds)
	}
	b.StopTimer()
	n := time.Duration(len(conc))
	b.ReportMetric(0, "ns/op")
	reportLatency(b, "concurrent", conc)
	reportLatency(b, "sequential", seq)
	b.ReportMetric(float64(eval.Percentile(conc, 50))/float64(eval.Percentile(seq, 50)), "conc/seq-p50")
	b.ReportMetric(float64(eval.Percentile(conc, 99))/float64(eval.Percentile(seq, 99)), "conc/seq-p99")
	b.ReportMetric(ms((perSource[0]+perSource[1]+perSource[2])/n), "seq-sum-ms")
	b.ReportMetric(ms(perSource[0]/n), "seq-vector-ms")
	b.ReportMetric(ms(perSource[1]/n), "seq-keyword-ms")
	b.ReportMetric(ms(perSource[2]/n), "seq-graph-ms")
	b.ReportMetric(ms(maxSource/n), "max-source-ms")
}
