package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// Searcher is what Run queries: *retriever.HybridRetriever, or a fake.
type Searcher interface {
	Retrieve(ctx context.Context, q retriever.Query) (*retriever.Result, error)
}

var _ Searcher = (*retriever.HybridRetriever)(nil)

// Mode is one retrieval configuration to evaluate.
type Mode struct {
	Name string
	// Single names the one source a single-source mode queries (keyword,
	// vector or graph); empty for hybrid modes. Hybrid modes are compared
	// with each single-source mode of the same run (Report.Comparisons).
	Single string
	// Sources is set as Query.Sources; nil keeps the server defaults (every
	// configured source, graph expansion included).
	Sources map[string]retriever.SourceOptions
	// Fusion and Expand are set as Query.Fusion and Query.Expand; zero
	// values keep the server defaults.
	Fusion retriever.FusionOptions
	Expand retriever.ExpandOptions
}

// Standard modes.
func KeywordMode() Mode {
	return Mode{Name: "keyword", Single: spi.SourceKeyword, Sources: retriever.Only(spi.SourceKeyword)}
}
func VectorMode() Mode {
	return Mode{Name: "vector", Single: spi.SourceVector, Sources: retriever.Only(spi.SourceVector)}
}

// GraphMode is the graph's first stage alone (entity match), without
// expansion.
func GraphMode() Mode {
	return Mode{Name: "graph", Single: spi.SourceGraph, Sources: retriever.Only(spi.SourceGraph)}
}

// HybridMode runs every configured source with the server's fusion and
// graph-expansion defaults.
func HybridMode() Mode { return Mode{Name: "hybrid"} }

// DefaultModes is keyword, vector, graph (when the deployment has one) and
// hybrid.
func DefaultModes(graph bool) []Mode {
	ms := []Mode{KeywordMode(), VectorMode()}
	if graph {
		ms = append(ms, GraphMode())
	}
	return append(ms, HybridMode())
}

// Cut-offs of the reported metrics.
const (
	NDCGCut   = 10
	RecallCut = 100
	MRRCut    = 10
)

// Options tune Run. Zero fields take defaults.
type Options struct {
	// Limit is the number of hits asked per query (and the fusion window);
	// default 100, which Recall@100 needs.
	Limit int
	// Tenant is set on every query.
	Tenant string
	// Warmup runs the first Warmup queries once per mode before measuring,
	// so latency percentiles do not include cold caches; default 10, -1
	// disables. Scores are unaffected.
	Warmup int
	// KeepRuns keeps every query's ranking in ModeReport.Runs (for
	// WriteRun and external tools such as pytrec_eval).
	KeepRuns bool
	// QueryEmbedder, when set, embeds every query text once, before the
	// modes run, in batches and under no deadline but ctx's; the queries
	// then carry their vectors. An evaluation is an offline measurement:
	// the server's query-embedding deadline (retriever.embed_timeout_ms,
	// made for users who wait) would score a query 0 whenever the machine
	// is busy. Without it the retriever embeds each query text itself,
	// under that deadline, once per mode. Latency percentiles then leave
	// the embedding out; Report.QueryEmbedding says what it took.
	QueryEmbedder spi.Embedder
	// Progress, when set, is called after each query.
	Progress func(mode string, done, total int)
	// Now times the queries; nil means time.Now.
	Now func() time.Time
}

// Report is the outcome of Run.
type Report struct {
	Dataset   string
	Documents int
	Queries   int
	Modes     []ModeReport
	// QueryEmbedding is the time Options.QueryEmbedder took for all query
	// texts (0 without one).
	QueryEmbedding time.Duration
	// Notes carries the dataset loader's notes.
	Notes []string
}

// queryEmbedBatch is the number of query texts embedded at once.
const queryEmbedBatch = 64

// embedQueries returns each query's vector, in order.
func embedQueries(ctx context.Context, e spi.Embedder, qs []Query) ([][]float32, error) {
	out := make([][]float32, 0, len(qs))
	for chunk := range slices.Chunk(qs, queryEmbedBatch) {
		texts := make([]string, len(chunk))
		for i, q := range chunk {
			texts[i] = q.Text
		}
		vs, err := e.Embed(ctx, texts)
		if err == nil && len(vs) != len(texts) {
			err = fmt.Errorf("the embedder returned %d vectors for %d texts", len(vs), len(texts))
		}
		for _, v := range vs {
			if err == nil {
				err = spi.ValidateVector(v, e.Dimension())
			}
		}
		if err != nil {
			return nil, fmt.Errorf("eval: embedding the queries: %w", err)
		}
		out = append(out, vs...)
	}
	return out, nil
}

// usesVector reports whether mode m may query the vector source.
func usesVector(m Mode) bool {
	o, set := m.Sources[spi.SourceVector]
	return !set || o.Enabled == nil || *o.Enabled
}

// ModeReport holds one mode's averages over the evaluated queries.
type ModeReport struct {
	Mode string
	// Single is the source of a single-source mode, empty for hybrid ones.
	Single    string
	NDCG10    float64
	Recall100 float64
	MRR10     float64
	// P50, P95 and P99 are nearest-rank percentiles of the Retrieve wall
	// time, failed queries included.
	P50, P95, P99 time.Duration
	// Queries is the number of evaluated queries. Failed queries returned
	// an error and score 0; Partial ones were answered with a source
	// dropped (Result.Partial).
	Queries, Failed, Partial int
	// FirstError is the first failure's message, for the report.
	FirstError string
	// Runs maps query id → ranked ids, when Options.KeepRuns.
	Runs map[string][]string
	// PerQueryNDCG10 is each evaluated query's nDCG@10, in the order of
	// the dataset's queries: the input of Compare's paired test.
	PerQueryNDCG10 []float64
}

// Run evaluates every judged query of ds in each mode and returns the
// report. A failing query scores zero and is counted, it does not stop the
// run; only ctx ending does.
func Run(ctx context.Context, ds *Dataset, s Searcher, modes []Mode, opts Options) (*Report, error) {
	if len(ds.Queries) == 0 {
		return nil, fmt.Errorf("%w: no queries to evaluate", ErrDataset)
	}
	if len(modes) == 0 {
		return nil, errors.New("eval: no modes to run")
	}
	if opts.Limit <= 0 {
		opts.Limit = RecallCut
	}
	switch {
	case opts.Warmup == 0:
		opts.Warmup = 10
	case opts.Warmup < 0:
		opts.Warmup = 0
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	rep := &Report{Dataset: ds.Name, Documents: len(ds.Corpus), Queries: len(ds.Queries), Notes: ds.Notes}
	var vectors map[string][]float32
	if opts.QueryEmbedder != nil && slices.ContainsFunc(modes, usesVector) {
		start := now()
		vs, err := embedQueries(ctx, opts.QueryEmbedder, ds.Queries)
		if err != nil {
			return nil, err
		}
		rep.QueryEmbedding = now().Sub(start)
		vectors = make(map[string][]float32, len(vs))
		for i, q := range ds.Queries {
			vectors[q.ID] = vs[i]
		}
	}
	for _, m := range modes {
		query := func(q Query) retriever.Query {
			rq := retriever.Query{Text: q.Text, Limit: opts.Limit, Window: opts.Limit, Tenant: opts.Tenant,
				Sources: m.Sources, Fusion: m.Fusion, Expand: m.Expand}
			if usesVector(m) {
				rq.Vector = vectors[q.ID]
			}
			return rq
		}
		for _, q := range ds.Queries[:min(opts.Warmup, len(ds.Queries))] {
			if _, err := s.Retrieve(ctx, query(q)); ctx.Err() != nil {
				return nil, fmt.Errorf("eval: %s: %w", m.Name, errors.Join(ctx.Err(), err))
			}
		}
		mr := ModeReport{Mode: m.Name, Single: m.Single, Queries: len(ds.Queries),
			PerQueryNDCG10: make([]float64, 0, len(ds.Queries))}
		if opts.KeepRuns {
			mr.Runs = make(map[string][]string, len(ds.Queries))
		}
		lat := make([]time.Duration, 0, len(ds.Queries))
		for i, q := range ds.Queries {
			start := now()
			res, err := s.Retrieve(ctx, query(q))
			lat = append(lat, now().Sub(start))
			if ctx.Err() != nil {
				return nil, fmt.Errorf("eval: %s: %w", m.Name, errors.Join(ctx.Err(), err))
			}
			var ranked []string
			switch {
			case err != nil:
				mr.Failed++
				if mr.FirstError == "" {
					mr.FirstError = err.Error()
				}
			case res != nil:
				if res.Partial {
					mr.Partial++
				}
				ranked = make([]string, len(res.Hits))
				for k, h := range res.Hits {
					ranked[k] = h.ID
				}
			}
			j := ds.Qrels[q.ID]
			ndcg := NDCG(ranked, j, NDCGCut)
			mr.PerQueryNDCG10 = append(mr.PerQueryNDCG10, ndcg)
			mr.NDCG10 += ndcg
			mr.Recall100 += Recall(ranked, j, RecallCut)
			mr.MRR10 += ReciprocalRank(ranked, j, MRRCut)
			if mr.Runs != nil {
				mr.Runs[q.ID] = ranked
			}
			if opts.Progress != nil {
				opts.Progress(m.Name, i+1, len(ds.Queries))
			}
		}
		n := float64(len(ds.Queries))
		mr.NDCG10 /= n
		mr.Recall100 /= n
		mr.MRR10 /= n
		mr.P50, mr.P95, mr.P99 = Percentile(lat, 50), Percentile(lat, 95), Percentile(lat, 99)
		rep.Modes = append(rep.Modes, mr)
	}
	return rep, nil
}

// WriteTable prints the report as a markdown table, followed by a line per
// mode that had failed or partial queries.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| mode | nDCG@10 | Recall@100 | MRR@10 | p50 ms | p95 ms | p99 ms | queries |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, m := range r.Modes {
		fmt.Fprintf(&b, "| %s | %.4f | %.4f | %.4f | %s | %s | %s | %d |\n",
			m.Mode, m.NDCG10, m.Recall100, m.MRR10, ms(m.P50), ms(m.P95), ms(m.P99), m.Queries)
	}
	cs, err := r.Comparisons()
	if err != nil {
		return err
	}
	if len(cs) > 0 {
		b.WriteString("\n")
	}
	best := ""
	if m := r.BestSingle(); m != nil {
		best = m.Mode
	}
	for _, c := range cs {
		label := ""
		if c.B == best {
			label = " (best single source)"
		}
		fmt.Fprintf(&b, "%s vs %s%s: ΔnDCG@10 = %+.4f, p = %.4f (paired randomization test, %d queries, %d sign flips); better on %d, worse on %d, tied on %d queries\n",
			c.A, c.B, label, c.MeanDiff, c.P, c.Better+c.Worse+c.Tied, RandomizationSamples, c.Better, c.Worse, c.Tied)
	}
	if r.QueryEmbedding > 0 {
		fmt.Fprintf(&b, "\nquery embedding: %d texts in %s, once before the modes and without the server's deadline (left out of the latencies above)\n",
			r.Queries, r.QueryEmbedding.Round(time.Millisecond))
	}
	for _, m := range r.Modes {
		if m.Failed > 0 || m.Partial > 0 {
			fmt.Fprintf(&b, "\n%s: %d failed (scored 0), %d partial", m.Mode, m.Failed, m.Partial)
			if m.FirstError != "" {
				fmt.Fprintf(&b, "; first error: %s", m.FirstError)
			}
			b.WriteString("\n")
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond))
}

// Mode returns the report of the named mode, or nil.
func (r *Report) Mode(name string) *ModeReport {
	i := slices.IndexFunc(r.Modes, func(m ModeReport) bool { return m.Mode == name })
	if i < 0 {
		return nil
	}
	return &r.Modes[i]
}

// IngestStats summarises Ingest.
type IngestStats struct {
	Documents, OK, Partial, Failed int
	// Skipped counts corpus entries with neither title nor text (Cranfield
	// has two), which the pipeline would reject as empty_document: they
	// cannot be retrieved by any source, so leaving them out changes no
	// score.
	Skipped int
	// FirstError is the first failed or partial result's code and message.
	FirstError string
	Took       time.Duration
}

// ingestWait bounds how long Ingest waits for the derived stores to apply
// a batch.
const ingestWait = 5 * time.Minute

func pending(r ingest.Result) bool {
	for _, st := range r.Stores {
		if st == ingest.StorePending {
			return true
		}
	}
	return false
}

// ErrIngest means some documents of the corpus were not fully written;
// scores computed anyway would be too low.
var ErrIngest = errors.New("eval: corpus not fully ingested")

// IngestOptions tune Ingest. Zero fields take defaults.
type IngestOptions struct {
	// Batch is the number of documents per Pipeline.Upsert (default 256).
	Batch int
	// Progress, when set, is called after each batch.
	Progress func(done, total int)
	// Now times the ingestion; nil means time.Now.
	Now func() time.Time
}

// Ingest writes the corpus through p. It returns ErrIngest, with the stats,
// when any document failed or was only partially written.
func Ingest(ctx context.Context, ds *Dataset, p *ingest.Pipeline, opts IngestOptions) (IngestStats, error) {
	batch := opts.Batch
	if batch <= 0 {
		batch = 256
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	st := IngestStats{Documents: len(ds.Corpus)}
	start := now()
	docs := make([]spi.Document, 0, len(ds.Corpus))
	for _, d := range ds.Corpus {
		if d.Title == "" && d.Text == "" && len(d.Vector) == 0 {
			st.Skipped++
			continue
		}
		docs = append(docs, d)
	}
	for chunk := range slices.Chunk(docs, batch) {
		if err := ctx.Err(); err != nil {
			return st, fmt.Errorf("eval: ingest: %w", err)
		}
		// Queries follow the ingestion at once: wait for every derived
		// store to apply each batch.
		for _, r := range p.Upsert(ctx, chunk, ingest.WriteOptions{Wait: ingestWait}) {
			switch {
			case r.Status != ingest.StatusOK:
				st.Failed++
			case pending(r):
				st.Partial++
				r.Code, r.Error = "pending", "a derived store had not applied the write after "+ingestWait.String()
			default:
				st.OK++
				continue
			}
			if st.FirstError == "" {
				st.FirstError = fmt.Sprintf("%s: %s: %s", r.ID, r.Code, r.Error)
			}
		}
		if opts.Progress != nil {
			opts.Progress(st.Skipped+st.OK+st.Partial+st.Failed, st.Documents)
		}
	}
	st.Took = now().Sub(start)
	if st.Failed > 0 || st.Partial > 0 {
		return st, fmt.Errorf("%w: %d failed, %d partial of %d; first: %s", ErrIngest, st.Failed, st.Partial, st.Documents, st.FirstError)
	}
	return st, nil
}
