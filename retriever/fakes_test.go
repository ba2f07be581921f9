package retriever_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/guard"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// fault is a fault-injecting behaviour: return Refs, or Err, after Delay
// (cut short by ctx), or Panic. Block waits for ctx to end.
type fault struct {
	Refs  []spi.Ref
	Err   error
	Delay time.Duration
	Block bool
	Panic any
}

// probe counts calls and ctx-observed exits of a fake.
type probe struct {
	calls     atomic.Int64
	cancelled atomic.Int64 // returned because ctx ended
	mu        sync.Mutex
	last      any // last request
}

func (p *probe) record(req any) {
	p.calls.Add(1)
	p.mu.Lock()
	p.last = req
	p.mu.Unlock()
}

func (p *probe) lastReq() any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

func (f fault) run(ctx context.Context, p *probe) ([]spi.Ref, error) {
	if f.Panic != nil {
		panic(f.Panic)
	}
	if f.Block || f.Delay > 0 {
		var wait <-chan time.Time
		if !f.Block {
			t := time.NewTimer(f.Delay)
			defer t.Stop()
			wait = t.C
		}
		select {
		case <-wait:
		case <-ctx.Done():
			p.cancelled.Add(1)
			return nil, fmt.Errorf("fake: %w", ctx.Err())
		}
	}
	if f.Err != nil {
		return nil, f.Err
	}
	return f.Refs, nil
}

type fakeVector struct {
	fault
	probe
	docs map[string]spi.Document
}

func (f *fakeVector) Retrieve(ctx context.Context, req spi.VectorRequest) ([]spi.Ref, error) {
	f.record(req)
	return f.run(ctx, &f.probe)
}

func (f *fakeVector) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	return hydrateFrom(f.docs, ids)
}

func (f *fakeVector) Health(context.Context) spi.Health { return spi.Health{Status: spi.StatusUp} }

type fakeKeyword struct {
	fault
	probe
}

func (f *fakeKeyword) Retrieve(ctx context.Context, req spi.KeywordRequest) ([]spi.Ref, error) {
	f.record(req)
	return f.run(ctx, &f.probe)
}

func (f *fakeKeyword) Hydrate(context.Context, []string) ([]spi.Document, []string, error) {
	return nil, nil, spi.ErrUnsupported
}

func (f *fakeKeyword) Health(context.Context) spi.Health { return spi.Health{Status: spi.StatusUp} }

type expandCall struct {
	Seeds []string
	Opts  spi.ExpandOptions
}

type fakeGraph struct {
	fault // MatchEntities
	probe
	expand      fault
	expandProbe probe
}

func (f *fakeGraph) MatchEntities(ctx context.Context, req spi.KeywordRequest) ([]spi.Ref, error) {
	f.record(req)
	return f.run(ctx, &f.probe)
}

func (f *fakeGraph) Expand(ctx context.Context, seeds []string, opts spi.ExpandOptions) ([]spi.Ref, error) {
	f.expandProbe.record(expandCall{Seeds: append([]string(nil), seeds...), Opts: opts})
	return f.expand.run(ctx, &f.expandProbe)
}

func (f *fakeGraph) Query(context.Context, string, map[string]any) ([]map[string]any, error) {
	return nil, spi.ErrUnsupported
}

func (f *fakeGraph) Hydrate(context.Context, []string) ([]spi.Document, []string, error) {
	return nil, nil, spi.ErrUnsupported
}

func (f *fakeGraph) Health(context.Context) spi.Health { return spi.Health{Status: spi.StatusUp} }

type fakeEmbedder struct {
	fault
	probe
	dim int
}

func (f *fakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.record(texts)
	if _, err := f.run(ctx, &f.probe); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = make([]float32, f.dim)
		out[i][0] = 1
	}
	return out, nil
}

func (f *fakeEmbedder) Dimension() int { return f.dim }

// fakeHydrator serves docs; Fault's Err/Delay/Panic/Block apply.
type fakeHydrator struct {
	fault
	probe
	docs map[string]spi.Document
}

func (f *fakeHydrator) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	f.record(append([]string(nil), ids...))
	if _, err := f.run(ctx, &f.probe); err != nil {
		return nil, nil, err
	}
	return hydrateFrom(f.docs, ids)
}

func hydrateFrom(docs map[string]spi.Document, ids []string) ([]spi.Document, []string, error) {
	var out []spi.Document
	var missing []string
	for _, id := range ids {
		if d, ok := docs[id]; ok {
			out = append(out, d)
		} else {
			missing = append(missing, id)
		}
	}
	return out, missing, nil
}

// refs builds a ranked list with descending scores 1.0, 0.9, ...
func refs(source string, ids ...string) []spi.Ref {
	out := make([]spi.Ref, len(ids))
	for i, id := range ids {
		out[i] = spi.Ref{ID: id, Score: 1 - float64(i)/10, Source: source}
	}
	return out
}

// docsFor returns documents (with vectors) for ids.
func docsFor(ids ...string) map[string]spi.Document {
	m := make(map[string]spi.Document, len(ids))
	for _, id := range ids {
		m[id] = spi.Document{ID: id, Title: "title " + id, Text: "body " + id, Vector: []float32{1, 2, 3}}
	}
	return m
}

// tenantDocs sets the tenant of every document of docs: a query scoped to
// a tenant sees only that tenant's documents (spi.Visible).
func tenantDocs(tenant string, docs map[string]spi.Document) map[string]spi.Document {
	for id, d := range docs {
		d.Tenant = tenant
		docs[id] = d
	}
	return docs
}

// stack is a set of fakes with the retriever config that wires them.
type stack struct {
	vec *fakeVector
	kw  *fakeKeyword
	gr  *fakeGraph
	emb *fakeEmbedder
	sor *fakeHydrator
}

func newStack() *stack {
	return &stack{
		vec: &fakeVector{fault: fault{Refs: refs("vector", "a", "b", "c")}},
		kw:  &fakeKeyword{fault: fault{Refs: refs("keyword", "b", "d", "a")}},
		gr:  &fakeGraph{fault: fault{Refs: refs("graph", "e", "b")}},
		emb: &fakeEmbedder{dim: 4},
		sor: &fakeHydrator{docs: tenantDocs("t1", docsFor("a", "b", "c", "d", "e", "f", "g"))},
	}
}

func (s *stack) config() retriever.Config {
	return retriever.Config{
		Vector:    s.vec,
		Keyword:   s.kw,
		Graph:     s.gr,
		Embedder:  s.emb,
		Hydrators: []retriever.NamedHydrator{{Name: "sor", Hydrator: s.sor}},
	}
}

func mustNew(tb testing.TB, cfg retriever.Config) *retriever.HybridRetriever {
	tb.Helper()
	r, err := retriever.New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return r
}

func mustRetrieve(tb testing.TB, r *retriever.HybridRetriever, q retriever.Query) *retriever.Result {
	tb.Helper()
	res, err := r.Retrieve(context.Background(), q)
	if err != nil {
		tb.Fatalf("Retrieve: %v", err)
	}
	return res
}

// mustOpenBreaker returns a real breaker forced open with a long cooldown.
func mustOpenBreaker(tb testing.TB, name string) *breaker.Breaker {
	tb.Helper()
	cfg := breaker.DefaultConfig()
	cfg.ResetTimeout = time.Hour
	b, err := breaker.New(name, cfg)
	if err != nil {
		tb.Fatalf("breaker.New: %v", err)
	}
	b.ForceOpen()
	if b.State() != breaker.Open {
		tb.Fatalf("breaker state %v after ForceOpen", b.State())
	}
	return b
}

// withBreaker puts a gate holding breaker b (no limit, no probe) in front
// of each of the named sources.
func withBreaker(cfg *retriever.Config, b *breaker.Breaker, names ...string) {
	if cfg.Gates == nil {
		cfg.Gates = map[string]spi.Gate{}
	}
	c := guard.NewCircuit(b, guard.ProbeConfig{})
	for _, n := range names {
		cfg.Gates[n] = guard.New(n, guard.Config{Circuit: c})
	}
}

func hitIDs(res *retriever.Result) []string {
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	return ids
}

func ptr[T any](v T) *T { return &v }

// fakeGate refuses Check with check and Admit with admit when set, and
// otherwise admits, recording every outcome.
type fakeGate struct {
	check, admit error
	mu           sync.Mutex
	outcomes     []spi.Outcome
}

func (g *fakeGate) Check() error { return g.check }

func (g *fakeGate) Admit(context.Context) (spi.Permit, error) {
	if g.admit != nil {
		return nil, g.admit
	}
	return g, nil
}

func (g *fakeGate) Done(o spi.Outcome, _ time.Duration) {
	g.mu.Lock()
	g.outcomes = append(g.outcomes, o)
	g.mu.Unlock()
}

func (g *fakeGate) seen() []spi.Outcome {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]spi.Outcome(nil), g.outcomes...)
}
