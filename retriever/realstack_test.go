package retriever_test

// Resilience scenarios of issue 4 against the real backends: pgvector on
// PostgreSQL, bleve in a temporary directory and Neo4j, each behind a real
// breaker, with the network faults injected by internal/faultproxy and,
// in TestRealStackPostgresRestart, a real PostgreSQL server stopped and
// started again. The servers come from internal/testenv: without them the
// tests skip, and with RAG_REQUIRE_INTEGRATION=1 they fail.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/graph"
	graphembedded "github.com/ragd/ragd/backends/graph/embedded"
	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/backends/vector"
	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/embedder/hashing"
	"github.com/ragd/ragd/eval"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/ingest/keyphrase"
	"github.com/ragd/ragd/internal/faultproxy"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
	"github.com/ragd/ragd/spi/spitest"
)

const (
	// rsDocs is the Cranfield subset ingested for the scenarios.
	rsDocs = 300
	// rsThreshold consecutive failures trip a breaker.
	rsThreshold = 3
	// rsReset is the breakers' open period: short, so recovery is seen
	// within the test, but longer than a query that waits for a faulty
	// source's deadline and a faulty hydrator's (2 x rsFaultTimeout), so
	// the query after a trip still finds the breaker open on a busy
	// machine.
	rsReset = time.Second
	// rsFaultTimeout is the operator's deadline (Defaults) of a source the
	// scenario blackholes, so that each query waits no longer. (A deadline
	// the query chose would be neutral for the breaker: issue 18 item 4.)
	rsFaultTimeout = 300 * time.Millisecond
	// rsRecoverWithin bounds the wait for a breaker to close again after
	// the fault is lifted; generous, the machine is shared.
	rsRecoverWithin = 20 * time.Second
)

// rsCorpus is a Cranfield subset ingested through ingest.Pipeline into a
// fresh PostgreSQL database, a bleve index and the shared Neo4j (under a
// tenant of its own, deleted at cleanup).
type rsCorpus struct {
	pgDSN   string
	neo     testenv.Neo4jConn
	keyword *keyword.Backend
	emb     *hashing.Embedder
	tenant  string
	ids     []string
	queries []string
}

// rsUnique returns a random lower-case token for ids and tenants.
func rsUnique(tb testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	return "rs" + hex.EncodeToString(b[:])
}

// rsDocuments returns the first n Cranfield documents with title or text,
// re-identified under tenant, and the test queries.
func rsDocuments(tb testing.TB, tenant string, n int) ([]spi.Document, []string) {
	tb.Helper()
	ds, err := eval.LoadBEIR(spitest.CranfieldDir(tb), "test")
	if err != nil {
		tb.Fatalf("load Cranfield: %v", err)
	}
	var docs []spi.Document
	for _, d := range ds.Corpus {
		if strings.TrimSpace(d.Title) == "" && strings.TrimSpace(d.Text) == "" {
			continue
		}
		d.ID = tenant + "-" + d.ID
		d.Tenant = tenant
		docs = append(docs, d)
		if len(docs) == n {
			break
		}
	}
	queries := make([]string, len(ds.Queries))
	for i, q := range ds.Queries {
		queries[i] = q.Text
	}
	return docs, queries
}

// rsIngest writes docs through the production write path: embed with the
// hashing embedder, extract keyphrase entities, record in record, and wait
// for the derived stores to apply the record's change log.
func rsIngest(tb testing.TB, emb spi.Embedder, record spi.Indexer, derived []ingest.NamedApplier, docs []spi.Document) {
	tb.Helper()
	x, err := keyphrase.New(keyphrase.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	p, err := ingest.New(ingest.Config{Record: record, Derived: derived, Embedder: emb, Extractor: x, BatchSize: 100})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); p.Run(runCtx) }()
	defer func() { stop(); <-done }()
	for i := 0; i < len(docs); i += 100 {
		for _, r := range p.Upsert(ctx, docs[i:min(i+100, len(docs))], ingest.WriteOptions{Wait: time.Minute}) {
			if r.Status != ingest.StatusOK || slices.Contains(slices.Collect(maps.Values(r.Stores)), ingest.StorePending) {
				tb.Fatalf("ingest %s: %s %s: %s %v", r.ID, r.Status, r.Code, r.Error, r.Stores)
			}
		}
	}
}

func rsEmbedder(tb testing.TB) *hashing.Embedder {
	tb.Helper()
	emb, err := hashing.New(hashing.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	return emb
}

func rsKeyword(tb testing.TB, dir string) *keyword.Backend {
	tb.Helper()
	kb, err := keyword.Open(keyword.Config{Dir: dir})
	if err != nil {
		tb.Fatalf("keyword.Open: %v", err)
	}
	tb.Cleanup(func() { kb.Close() })
	return kb
}

// rsOpenVector and rsOpenGraph open the stores with the production
// defaults (a 2 s connect timeout, longer than the per-source deadlines
// used here, so a blackholed server shows as the source's timeout).
func rsOpenVector(tb testing.TB, dsn string, dim int) *vector.Backend {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	vb, err := vector.Open(ctx, vector.Config{DSN: dsn, Dimension: dim})
	if err != nil {
		tb.Fatalf("vector.Open: %v", err)
	}
	tb.Cleanup(func() { vb.Close() })
	return vb
}

func rsOpenGraph(tb testing.TB, uri string, conn testenv.Neo4jConn) *graph.Backend {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gb, err := graph.Open(ctx, graph.Config{URI: uri, User: conn.User, Password: conn.Password})
	if err != nil {
		tb.Fatalf("graph.Open: %v", err)
	}
	tb.Cleanup(func() { gb.Close() })
	return gb
}

// loadRSCorpus ingests the first n Cranfield documents; the stores are
// direct connections used only for ingestion and cleanup; scenarios open
// their own, through proxies.
func loadRSCorpus(tb testing.TB, n int) *rsCorpus {
	tb.Helper()
	c := &rsCorpus{pgDSN: testenv.Postgres(tb), neo: testenv.Neo4j(tb), tenant: rsUnique(tb), emb: rsEmbedder(tb)}
	docs, queries := rsDocuments(tb, c.tenant, n)
	c.queries = queries
	for _, d := range docs {
		c.ids = append(c.ids, d.ID)
	}
	vb := rsOpenVector(tb, c.pgDSN, c.emb.Dimension())
	gb := rsOpenGraph(tb, c.neo.URI, c.neo)
	tb.Cleanup(func() { // before gb closes (cleanups run last-in first-out)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := gb.Delete(ctx, c.ids); err != nil {
			tb.Errorf("clean up Neo4j tenant %s: %v", c.tenant, err)
		}
	})
	c.keyword = rsKeyword(tb, filepath.Join(tb.TempDir(), "bleve"))
	start := time.Now()
	defer func() { tb.Logf("ingested %d documents in %v", len(docs), time.Since(start).Round(time.Millisecond)) }()
	rsIngest(tb, c.emb, vb, []ingest.NamedApplier{{Name: spi.SourceKeyword, Applier: c.keyword}, {Name: spi.SourceGraph, Applier: gb}}, docs)
	return c
}

// rsStack is one retriever over the corpus, with PostgreSQL and Neo4j
// reached through fault proxies and a fresh breaker per source.
type rsStack struct {
	r                 *retriever.HybridRetriever
	vb, kb, gb        *breaker.Breaker
	pgProxy, neoProxy *faultproxy.Proxy
	vector            *vector.Backend
	graph             *graph.Backend
	// The sources the retriever queries (behind gates).
	vectorSrc  spi.VectorRetrievalBackend
	keywordSrc spi.KeywordRetrievalBackend
	graphSrc   spi.GraphRetrievalBackend
	log        *rsTransitions
}

// rsTransitions records breaker transitions.
type rsTransitions struct {
	mu  sync.Mutex
	all []breaker.Transition
}

func (l *rsTransitions) record(t breaker.Transition) {
	l.mu.Lock()
	l.all = append(l.all, t)
	l.mu.Unlock()
}

// path returns name's transitions as "closed>open" steps.
func (l *rsTransitions) path(name string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, t := range l.all {
		if t.Name == name {
			out = append(out, t.From.String()+">"+t.To.String())
		}
	}
	return out
}

// rsBreaker returns a breaker configured as app does (errors that
// are the caller's fault are neutral), with rsThreshold and rsReset unless
// tune changes them.
func rsBreaker(tb testing.TB, name string, log *rsTransitions, tune func(*breaker.Config)) *breaker.Breaker {
	tb.Helper()
	cfg := breaker.DefaultConfig()
	cfg.FailureThreshold = rsThreshold
	cfg.ResetTimeout = rsReset
	if tune != nil {
		tune(&cfg)
	}
	cfg.ShouldCount = breaker.IgnoreErrors(spi.ErrInvalidQuery, spi.ErrNotFound)
	cfg.OnStateChange = log.record
	b, err := breaker.New(name, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// rsProxy starts a fault proxy in front of addr, closed at cleanup.
func rsProxy(tb testing.TB, addr string) *faultproxy.Proxy {
	tb.Helper()
	p, err := faultproxy.New(addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	return p
}

// pgHostPort returns the host:port a PostgreSQL DSN (URL or key=value)
// points at, and a function building the same DSN for another host:port.
func pgHostPort(tb testing.TB, dsn string) (string, func(string) string) {
	tb.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			tb.Fatal(err)
		}
		hp := u.Host
		if u.Port() == "" {
			hp += ":5432"
		}
		return hp, func(addr string) string { v := *u; v.Host = addr; return v.String() }
	}
	host, port := "localhost", "5432"
	for _, f := range strings.Fields(dsn) {
		if k, v, ok := strings.Cut(f, "="); ok {
			switch k {
			case "host":
				host = v
			case "port":
				port = v
			}
		}
	}
	return host + ":" + port, func(addr string) string {
		h, p, _ := strings.Cut(addr, ":")
		return dsn + " host=" + h + " port=" + p // later keys win
	}
}

// boltHostPort returns the host:port of a bolt:// or neo4j:// URI.
func boltHostPort(tb testing.TB, uri string) (string, string) {
	tb.Helper()
	u, err := url.Parse(uri)
	if err != nil || u.Host == "" {
		tb.Fatalf("Neo4j URI %q: %v", uri, err)
	}
	hp := u.Host
	if u.Port() == "" {
		hp += ":7687"
	}
	return hp, u.Scheme
}

// rsStackOptions tune newStack.
type rsStackOptions struct {
	// Defaults for the retriever; zero values take the built-in ones.
	Defaults retriever.Defaults
	// Keyword replaces the corpus' keyword index (for the all-dead test).
	Keyword spi.KeywordRetrievalBackend
	// Tune, when set, adjusts every breaker's config (the defaults are
	// rsBreaker's).
	Tune func(*breaker.Config)
}

// newStack opens PostgreSQL and Neo4j through fresh proxies and wires a
// retriever the way app does: a gate with a breaker per source
// (the expansion sharing the graph's), the stores as hydrators (vector,
// the system of record, first), skipped while their circuit is open.
func (c *rsCorpus) newStack(tb testing.TB, o rsStackOptions) *rsStack {
	tb.Helper()
	s := &rsStack{log: &rsTransitions{}}
	pgAddr, pgVia := pgHostPort(tb, c.pgDSN)
	s.pgProxy = rsProxy(tb, pgAddr)
	s.vector = rsOpenVector(tb, pgVia(s.pgProxy.Addr()), c.emb.Dimension())
	neoAddr, scheme := boltHostPort(tb, c.neo.URI)
	s.neoProxy = rsProxy(tb, neoAddr)
	s.graph = rsOpenGraph(tb, scheme+"://"+s.neoProxy.Addr(), c.neo)

	var kw spi.KeywordRetrievalBackend = c.keyword
	if o.Keyword != nil {
		kw = o.Keyword
	}
	s.vb = rsBreaker(tb, spi.SourceVector, s.log, o.Tune)
	s.kb = rsBreaker(tb, spi.SourceKeyword, s.log, o.Tune)
	s.gb = rsBreaker(tb, spi.SourceGraph, s.log, o.Tune)
	cfg := retriever.Config{
		Vector:   s.vector,
		Keyword:  kw,
		Graph:    s.graph,
		Embedder: c.emb,
		Hydrators: []retriever.NamedHydrator{
			{Name: spi.SourceVector, Hydrator: s.vector},
			{Name: spi.SourceKeyword, Hydrator: kw},
			{Name: spi.SourceGraph, Hydrator: s.graph},
		},
		Defaults: o.Defaults,
	}
	withBreaker(&cfg, s.vb, spi.SourceVector)
	withBreaker(&cfg, s.kb, spi.SourceKeyword)
	withBreaker(&cfg, s.gb, spi.SourceGraph, spi.SourceGraphExpand)
	r, err := retriever.New(cfg)
	if err != nil {
		tb.Fatalf("retriever.New: %v", err)
	}
	s.r = r
	s.vectorSrc, s.keywordSrc, s.graphSrc = s.vector, kw, s.graph
	return s
}

// query runs text for the corpus' tenant.
func (c *rsCorpus) query(text string) retriever.Query {
	return retriever.Query{Text: text, Tenant: c.tenant, Limit: 10, Explain: true}
}

func rsRetrieve(tb testing.TB, r *retriever.HybridRetriever, q retriever.Query) *retriever.Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.Retrieve(ctx, q)
	if err != nil {
		tb.Fatalf("Retrieve: %v", err)
	}
	return res
}

func statusOf(res *retriever.Result, name string) retriever.Status { return res.Sources[name].Status }

// describeSources renders every source's status for failure messages.
func describeSources(m map[string]retriever.SourceStatus) string {
	var b strings.Builder
	for _, name := range []string{spi.SourceVector, spi.SourceKeyword, spi.SourceGraph, spi.SourceGraphExpand} {
		s := m[name]
		fmt.Fprintf(&b, " %s=%s", name, s.Status)
		if s.Error != "" {
			fmt.Fprintf(&b, "(%s)", s.Error)
		}
	}
	return b.String()
}

// requireServed checks what every degraded answer must still be: a full
// page of hydrated hits from the surviving sources, nothing missing.
func requireServed(tb testing.TB, res *retriever.Result, alive ...string) {
	tb.Helper()
	for _, name := range alive {
		if s := res.Sources[name]; s.Status != retriever.StatusOK || s.Returned == 0 {
			tb.Fatalf("surviving source %s = %+v; sources:%s", name, s, describeSources(res.Sources))
		}
	}
	if len(res.Hits) != 10 {
		tb.Fatalf("%d hits, want a full page of 10; sources:%s", len(res.Hits), describeSources(res.Sources))
	}
	for _, h := range res.Hits {
		if h.Document == nil || (h.Document.Title == "" && h.Document.Text == "") {
			tb.Fatalf("hit %s not hydrated (missing %v, hydration %+v)", h.ID, res.Missing, res.Hydration)
		}
		for src, c := range h.Explain {
			if c != nil && !slices.Contains(alive, src) && src != spi.SourceGraphExpand {
				tb.Fatalf("hit %s carries a contribution from dropped source %s", h.ID, src)
			}
		}
	}
	if len(res.Missing) != 0 {
		tb.Fatalf("missing %v, want every page document hydrated by some store", res.Missing)
	}
}

// healthyQueries picks queries for which all three sources return hits
// on the healthy stack.
func (c *rsCorpus) healthyQueries(tb testing.TB, s *rsStack, n int) []string {
	tb.Helper()
	var out []string
	for _, text := range c.queries {
		res := rsRetrieve(tb, s.r, c.query(text))
		if res.Sources[spi.SourceGraph].Returned > 0 && res.Sources[spi.SourceVector].Returned > 0 && res.Sources[spi.SourceKeyword].Returned > 0 {
			out = append(out, text)
			if len(out) == n {
				return out
			}
		}
	}
	tb.Fatalf("only %d of %d queries found hits in all three sources", len(out), len(c.queries))
	return nil
}

func TestRealStack(t *testing.T) {
	c := loadRSCorpus(t, rsDocs)
	var queries []string

	t.Run("healthy", func(t *testing.T) {
		s := c.newStack(t, rsStackOptions{})
		queries = c.healthyQueries(t, s, 8)
		for _, text := range queries {
			res := rsRetrieve(t, s.r, c.query(text))
			if res.Partial || res.Degraded {
				t.Fatalf("healthy stack: partial=%v degraded=%v; sources:%s", res.Partial, res.Degraded, describeSources(res.Sources))
			}
			requireServed(t, res, spi.SourceVector, spi.SourceKeyword, spi.SourceGraph)
			if st := statusOf(res, spi.SourceGraphExpand); st != retriever.StatusOK {
				t.Fatalf("graph_expand = %s, want ok on a healthy graph", st)
			}
			if h := res.Hydration[spi.SourceVector]; h.Status != retriever.StatusOK || h.Returned != 10 {
				t.Fatalf("system of record hydration = %+v, want ok with the whole page", h)
			}
			requireRRF(t, res)
		}
		requireFusedAcrossSources(t, s, c, queries)
		if p := s.log.path(spi.SourceGraph); len(p) != 0 {
			t.Fatalf("graph breaker moved on a healthy stack: %v", p)
		}
	})
	if len(queries) == 0 {
		t.Fatal("no healthy queries; later scenarios need them")
	}

	t.Run("graph_refused", func(t *testing.T) {
		s := c.newStack(t, rsStackOptions{})
		warm(t, s, c, queries)
		s.neoProxy.Refuse()
		faultPhase(t, s, c, queries, s.gb, spi.SourceGraph, retriever.StatusError, 0)
		s.neoProxy.Pass()
		recoverPhase(t, s, c, queries, s.gb, spi.SourceGraph)
	})

	t.Run("graph_blackholed", func(t *testing.T) {
		s := c.newStack(t, rsStackOptions{Defaults: retriever.Defaults{Sources: rsDeadline(spi.SourceGraph)}})
		warm(t, s, c, queries)
		s.neoProxy.Blackhole()
		faultPhase(t, s, c, queries, s.gb, spi.SourceGraph, retriever.StatusTimeout, rsFaultTimeout)
		s.neoProxy.Pass()
		recoverPhase(t, s, c, queries, s.gb, spi.SourceGraph)
	})

	t.Run("postgres_refused", func(t *testing.T) {
		s := c.newStack(t, rsStackOptions{})
		warm(t, s, c, queries)
		s.pgProxy.Refuse()
		faultPhase(t, s, c, queries, s.vb, spi.SourceVector, retriever.StatusError, 0)
		s.pgProxy.Pass()
		recoverPhase(t, s, c, queries, s.vb, spi.SourceVector)
	})

	t.Run("postgres_blackholed", func(t *testing.T) {
		// With the raw store as system-of-record hydrator (as app
		// wires it) every query would also wait for the hydration
		// deadline, breaker open or not; the guarded store is skipped
		// once its breaker is open.
		s := c.newStack(t, rsStackOptions{Defaults: retriever.Defaults{HydrateTimeout: rsFaultTimeout, Sources: rsDeadline(spi.SourceVector)}})
		warm(t, s, c, queries)
		s.pgProxy.Blackhole()
		faultPhase(t, s, c, queries, s.vb, spi.SourceVector, retriever.StatusTimeout, rsFaultTimeout)
		s.pgProxy.Pass()
		recoverPhase(t, s, c, queries, s.vb, spi.SourceVector)
	})

	t.Run("all_dead", func(t *testing.T) {
		// The keyword index is in-process; a closed index is its outage.
		dead := rsKeyword(t, t.TempDir())
		if err := dead.Close(); err != nil {
			t.Fatal(err)
		}
		s := c.newStack(t, rsStackOptions{Keyword: dead})
		s.pgProxy.Refuse()
		s.neoProxy.Refuse()
		ctx := context.Background()
		sawOpen := false
		for i := range rsThreshold + 2 {
			res, err := s.r.Retrieve(ctx, c.query(queries[i%len(queries)]))
			var nes *retriever.NotEnoughSourcesError
			if !errors.As(err, &nes) || !errors.Is(err, retriever.ErrNotEnoughSources) {
				t.Fatalf("query %d with every source dead = %v, %v; want *NotEnoughSourcesError", i, res, err)
			}
			if nes.Healthy != 0 || nes.Required != 1 {
				t.Fatalf("NotEnoughSourcesError{Required %d, Healthy %d}, want 1, 0", nes.Required, nes.Healthy)
			}
			for _, name := range []string{spi.SourceVector, spi.SourceKeyword, spi.SourceGraph} {
				switch st := nes.Sources[name].Status; st {
				case retriever.StatusError:
				case retriever.StatusCircuitOpen:
					sawOpen = true
				default:
					t.Fatalf("query %d: %s = %s, want error or circuit_open;%s", i, name, st, describeSources(nes.Sources))
				}
			}
		}
		if !sawOpen {
			t.Fatal("no breaker opened after repeated failures of every source")
		}
		for _, b := range []*breaker.Breaker{s.vb, s.kb, s.gb} {
			if p := s.log.path(b.Name()); len(p) == 0 || p[0] != "closed>open" {
				t.Fatalf("%s breaker transitions = %v, want it tripped", b.Name(), p)
			}
		}
	})
}

// warm runs the queries once on a healthy stack, so pools hold connections
// when the fault starts (a fault on idle pools is the easy case).
func warm(tb testing.TB, s *rsStack, c *rsCorpus, queries []string) {
	tb.Helper()
	for _, text := range queries[:3] {
		res := rsRetrieve(tb, s.r, c.query(text))
		if res.Degraded {
			tb.Fatalf("warm-up on the healthy stack degraded:%s", describeSources(res.Sources))
		}
	}
}

// rsDeadline sets source's operator deadline to rsFaultTimeout (the
// expansion inherits the graph's).
func rsDeadline(source string) map[string]retriever.SourceOptions {
	return map[string]retriever.SourceOptions{source: {TimeoutMS: int(rsFaultTimeout.Milliseconds())}}
}

// faultPhase queries while source is faulty. Every query must still
// answer from the other sources. The source must first fail with
// failStatus, then, once its breaker has tripped, be skipped as
// circuit_open. timeout, when set, is the faulty source's deadline, which
// the stack's Defaults set: a timeout must not come before it.
func faultPhase(t *testing.T, s *rsStack, c *rsCorpus, queries []string, b *breaker.Breaker, source string, failStatus retriever.Status, timeout time.Duration) {
	t.Helper()
	alive := []string{spi.SourceVector, spi.SourceKeyword, spi.SourceGraph}
	alive = slices.DeleteFunc(alive, func(n string) bool { return n == source })
	var seq []retriever.Status
	tripped := false
	// Each failing query counts at least one failure (two for the graph:
	// stage 1 and the expansion), so the breaker trips within rsThreshold
	// queries; then the next query must find it open. A slow machine may
	// let the open period pass between two queries, so allow a few more.
	for i := 0; i < rsThreshold+6 && !tripped; i++ {
		res := rsRetrieve(t, s.r, c.query(queries[i%len(queries)]))
		st := res.Sources[source]
		seq = append(seq, st.Status)
		if !res.Degraded || !res.Partial {
			t.Fatalf("query %d with %s faulty: degraded=%v partial=%v, want both", i, source, res.Degraded, res.Partial)
		}
		requireServed(t, res, alive...)
		switch st.Status {
		case failStatus:
			if st.Returned != 0 {
				t.Fatalf("failed source returned %d refs", st.Returned)
			}
			if failStatus == retriever.StatusTimeout && timeout > 0 && st.TookMS < float64(timeout.Milliseconds())*0.9 {
				t.Fatalf("%s timed out after %.1fms, before its %v deadline", source, st.TookMS, timeout)
			}
		case retriever.StatusCircuitOpen:
			if st.TookMS != 0 || st.RetryInMS <= 0 || st.RetryInMS > rsReset.Milliseconds() {
				t.Fatalf("circuit_open status %+v: want took 0 and retry_in_ms in (0, %d]", st, rsReset.Milliseconds())
			}
			tripped = true
		default:
			t.Fatalf("query %d: %s = %+v, want %s or circuit_open", i, source, st, failStatus)
		}
		if source == spi.SourceVector {
			requireFallbackHydration(t, res, failStatus)
		}
	}
	if !tripped {
		t.Fatalf("%s statuses %v: its breaker never opened (transitions %v)", source, seq, s.log.path(source))
	}
	if seq[0] != failStatus {
		t.Fatalf("%s statuses %v: the first faulty query should fail with %s", source, seq, failStatus)
	}
	if p := s.log.path(source); len(p) == 0 || p[0] != "closed>open" {
		t.Fatalf("%s breaker transitions %v, want closed>open first", source, p)
	}
	t.Logf("%s statuses while faulty: %v", source, seq)
}

// requireFallbackHydration: with PostgreSQL faulty the system-of-record
// hydrator fails (or times out) and the keyword index serves the page.
func requireFallbackHydration(t *testing.T, res *retriever.Result, failStatus retriever.Status) {
	t.Helper()
	sor, kw := res.Hydration[spi.SourceVector], res.Hydration[spi.SourceKeyword]
	if sor.Status == retriever.StatusOK {
		t.Fatalf("system-of-record hydration ok with PostgreSQL faulty: %+v", sor)
	}
	if failStatus == retriever.StatusTimeout && sor.Status != retriever.StatusTimeout && sor.Status != retriever.StatusCircuitOpen {
		t.Fatalf("system-of-record hydration = %+v, want timeout (or circuit_open) while blackholed", sor)
	}
	if res.Sources[spi.SourceVector].Status == retriever.StatusCircuitOpen && failStatus == retriever.StatusTimeout && sor.Status != retriever.StatusCircuitOpen {
		t.Fatalf("system-of-record hydration = %+v with the vector breaker open, want circuit_open (skipped)", sor)
	}
	if kw.Status != retriever.StatusOK || kw.Returned != len(res.Hits) {
		t.Fatalf("keyword fallback hydration = %+v, want ok with the whole page", kw)
	}
}

// recoverPhase: after the fault is lifted, queries keep answering and,
// once the open period has passed, a half-open trial closes the breaker
// again without help: the source is ok and fused again.
func recoverPhase(t *testing.T, s *rsStack, c *rsCorpus, queries []string, b *breaker.Breaker, source string) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(rsRecoverWithin)
	incomplete := "none"
	for i := 0; ; i++ {
		res := rsRetrieve(t, s.r, c.query(queries[i%len(queries)]))
		if res.Sources[source].Status == retriever.StatusOK && b.State() == breaker.Closed {
			if !res.Degraded && !res.Partial {
				requireServed(t, res, spi.SourceVector, spi.SourceKeyword, spi.SourceGraph)
				break
			}
			// Recovered, but another source missed its deadline in this
			// answer (graph_expand's 1 s on a loaded machine): ask again;
			// a fault that is not lifted fails below.
			incomplete = fmt.Sprintf("degraded=%v partial=%v:%s", res.Degraded, res.Partial, describeSources(res.Sources))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not recovered with a complete answer %v after the fault was lifted: status %+v, breaker %v, transitions %v; last recovered but incomplete answer: %s",
				source, rsRecoverWithin, res.Sources[source], b.State(), s.log.path(source), incomplete)
		}
		time.Sleep(20 * time.Millisecond)
	}
	p := s.log.path(source)
	if len(p) < 3 || p[len(p)-2] != "open>half_open" || p[len(p)-1] != "half_open>closed" {
		t.Fatalf("%s breaker transitions %v, want to end with open>half_open>closed", source, p)
	}
	t.Logf("%s recovered %v after the fault was lifted; transitions %v", source, time.Since(start).Round(time.Millisecond), p)
}

// requireRRF checks the fused scores on real data against the RRF formula:
// every contribution is weight / (60 + rank) and they add up to the score.
func requireRRF(t *testing.T, res *retriever.Result) {
	t.Helper()
	for _, h := range res.Hits {
		sum := 0.0
		for src, c := range h.Explain {
			if c == nil {
				continue
			}
			w := res.Fusion.Weights[src]
			if want := w / float64(retriever.DefaultRRFK+c.Rank); math.Abs(c.Contribution-want) > 1e-12 {
				t.Fatalf("hit %s, %s: contribution %v, want %v / (60 + %d)", h.ID, src, c.Contribution, w, c.Rank)
			}
			sum += c.Contribution
		}
		if math.Abs(sum-h.Score) > 1e-12 {
			t.Fatalf("hit %s: score %v, contributions add up to %v", h.ID, h.Score, sum)
		}
	}
}

// requireFusedAcrossSources compares the retriever's stage-1 ranking with
// FuseRRF over the lists the three backends return when asked directly,
// and requires some page to mix documents found by different sources.
func requireFusedAcrossSources(t *testing.T, s *rsStack, c *rsCorpus, queries []string) {
	t.Helper()
	ctx := context.Background()
	mixed := false
	for _, text := range queries {
		q := c.query(text)
		q.Expand.Enabled = new(bool) // stage 1 only: compare with FuseRRF of three lists
		res := rsRetrieve(t, s.r, q)
		vecs, err := c.emb.Embed(ctx, []string{text})
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.vector.Retrieve(ctx, spi.VectorRequest{Vector: vecs[0], K: retriever.DefaultWindow, Tenant: c.tenant})
		if err != nil {
			t.Fatal(err)
		}
		k, err := c.keyword.Retrieve(ctx, spi.KeywordRequest{Text: text, K: retriever.DefaultWindow, Tenant: c.tenant})
		if err != nil {
			t.Fatal(err)
		}
		g, err := s.graph.MatchEntities(ctx, spi.KeywordRequest{Text: text, K: retriever.DefaultWindow, Tenant: c.tenant})
		if err != nil {
			t.Fatal(err)
		}
		fused := retriever.FuseRRF([]retriever.RankedList{
			{Source: spi.SourceVector, Weight: 1, Refs: v},
			{Source: spi.SourceKeyword, Weight: 1, Refs: k},
			{Source: spi.SourceGraph, Weight: 1, Refs: g},
		}, 0)
		for i, h := range res.Hits {
			if h.ID != fused[i].ID || math.Abs(h.Score-fused[i].Score) > 1e-12 {
				t.Fatalf("query %q rank %d: retriever %s (%v), FuseRRF of the backends' lists %s (%v)",
					text, i+1, h.ID, h.Score, fused[i].ID, fused[i].Score)
			}
			n := 0
			for _, c := range h.Explain {
				if c != nil {
					n++
				}
			}
			if n >= 2 {
				mixed = true
			}
		}
	}
	if !mixed {
		t.Fatal("no hit was found by two sources in any query: fusion untested")
	}
}

// TestRealStackPostgresRestart stops a real PostgreSQL server (the system
// of record) under the retriever: queries go on, degraded, from the keyword
// index and the graph, with hydration falling back to them; after the
// server is started again the retriever recovers on its own.
func TestRealStackPostgresRestart(t *testing.T) {
	srv := testenv.DedicatedPostgres(t)
	emb := rsEmbedder(t)
	tenant := rsUnique(t)
	docs, queries := rsDocuments(t, tenant, rsDocs)
	vb := rsOpenVector(t, srv.DSN, emb.Dimension())
	kb := rsKeyword(t, t.TempDir())
	gs, err := graphembedded.Open(context.Background(), graphembedded.Config{Dir: t.TempDir(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gs.Close() })
	rsIngest(t, emb, vb, []ingest.NamedApplier{{Name: spi.SourceKeyword, Applier: kb}, {Name: spi.SourceGraph, Applier: gs}}, docs)

	log := &rsTransitions{}
	vbr := rsBreaker(t, spi.SourceVector, log, nil)
	cfg := retriever.Config{
		Vector:   vb,
		Keyword:  kb,
		Graph:    gs,
		Embedder: emb,
		Hydrators: []retriever.NamedHydrator{
			{Name: spi.SourceVector, Hydrator: vb},
			{Name: spi.SourceKeyword, Hydrator: kb},
			{Name: spi.SourceGraph, Hydrator: gs},
		},
	}
	withBreaker(&cfg, vbr, spi.SourceVector)
	withBreaker(&cfg, rsBreaker(t, spi.SourceKeyword, log, nil), spi.SourceKeyword)
	withBreaker(&cfg, rsBreaker(t, spi.SourceGraph, log, nil), spi.SourceGraph, spi.SourceGraphExpand)
	r, err := retriever.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	query := func(i int) retriever.Query {
		return retriever.Query{Text: queries[i%len(queries)], Tenant: tenant, Limit: 10, Explain: true}
	}
	for i := range 3 {
		res := rsRetrieve(t, r, query(i))
		if res.Degraded || res.Sources[spi.SourceVector].Returned == 0 {
			t.Fatalf("before the stop: degraded=%v;%s", res.Degraded, describeSources(res.Sources))
		}
	}

	ctx := context.Background()
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var seq []retriever.Status
	for i := 0; i < rsThreshold+6 && vbr.State() != breaker.Open; i++ {
		res := rsRetrieve(t, r, query(i))
		seq = append(seq, res.Sources[spi.SourceVector].Status)
		if !res.Degraded || !res.Partial {
			t.Fatalf("server stopped: degraded=%v partial=%v", res.Degraded, res.Partial)
		}
		if st := res.Sources[spi.SourceVector].Status; st != retriever.StatusError && st != retriever.StatusCircuitOpen {
			t.Fatalf("vector with its server stopped = %+v, want error (connection refused) or circuit_open", res.Sources[spi.SourceVector])
		}
		requireServed(t, res, spi.SourceKeyword, spi.SourceGraph)
		requireFallbackHydration(t, res, retriever.StatusError)
	}
	if vbr.State() != breaker.Open {
		t.Fatalf("vector breaker %v after %v with the server stopped, want open", vbr.State(), seq)
	}
	res := rsRetrieve(t, r, query(0))
	if st := res.Sources[spi.SourceVector]; st.Status != retriever.StatusCircuitOpen && st.Status != retriever.StatusError {
		t.Fatalf("vector after the trip = %+v, want circuit_open (or error from a trial)", st)
	}
	requireServed(t, res, spi.SourceKeyword, spi.SourceGraph)
	t.Logf("vector statuses with the server stopped: %v", seq)

	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := 0; ; i++ {
		res := rsRetrieve(t, r, query(i))
		if res.Sources[spi.SourceVector].Status == retriever.StatusOK && !res.Degraded {
			requireServed(t, res, spi.SourceVector, spi.SourceKeyword, spi.SourceGraph)
			if h := res.Hydration[spi.SourceVector]; h.Status != retriever.StatusOK || h.Returned != 10 {
				t.Fatalf("system of record after restart: hydration %+v", h)
			}
			break
		}
		if time.Since(start) > rsRecoverWithin {
			t.Fatalf("not recovered %v after Start: %s; transitions %v", rsRecoverWithin, describeSources(res.Sources), log.path(spi.SourceVector))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if p := log.path(spi.SourceVector); p[len(p)-1] != "half_open>closed" {
		t.Fatalf("vector transitions %v, want to end closed through a half-open trial", p)
	}
	t.Logf("recovered %v after Start; vector transitions %v", time.Since(start).Round(time.Millisecond), log.path(spi.SourceVector))
}

// TestSourceDeadlineCountsAgainstBreaker needs no server: a source that
// does not answer within the deadline the operator configured trips its
// breaker (no other call succeeded meanwhile), while a source cut off by
// the query budget, the caller's limit, does not. Without the first, a
// blackholed backend would be waited for on every query forever.
func TestSourceDeadlineCountsAgainstBreaker(t *testing.T) {
	newGuarded := func(t *testing.T) (*retriever.HybridRetriever, *breaker.Breaker, *stack) {
		s := newStack()
		s.gr.fault = fault{Block: true}
		bc := breaker.DefaultConfig()
		bc.FailureThreshold = 2
		bc.ResetTimeout = time.Hour
		b, err := breaker.New(spi.SourceGraph, bc)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.config()
		cfg.Defaults.Sources = map[string]retriever.SourceOptions{spi.SourceGraph: {TimeoutMS: 20}}
		withBreaker(&cfg, b, spi.SourceGraph, spi.SourceGraphExpand)
		return mustNew(t, cfg), b, s
	}
	t.Run("own deadline trips", func(t *testing.T) {
		r, b, s := newGuarded(t)
		// Stage 2 off, so that only stage 1 calls the graph.
		q := retriever.Query{Text: "q", Expand: retriever.ExpandOptions{Enabled: ptr(false)}}
		for range 2 {
			res := mustRetrieve(t, r, q)
			if st := res.Sources[spi.SourceGraph]; st.Status != retriever.StatusTimeout {
				t.Fatalf("graph = %+v, want timeout", st)
			}
		}
		if b.State() != breaker.Open {
			t.Fatalf("breaker %v after two source timeouts, want open", b.State())
		}
		res := mustRetrieve(t, r, q)
		if st := res.Sources[spi.SourceGraph]; st.Status != retriever.StatusCircuitOpen || s.gr.calls.Load() != 2 {
			t.Fatalf("after the trip: graph %+v, %d calls; want circuit_open without a call", st, s.gr.calls.Load())
		}
	})
	t.Run("budget does not trip", func(t *testing.T) {
		r, b, _ := newGuarded(t)
		q := retriever.Query{Text: "q", BudgetMS: 30, Expand: retriever.ExpandOptions{Enabled: ptr(false)},
			Sources: map[string]retriever.SourceOptions{spi.SourceGraph: {TimeoutMS: 5000}}}
		for range 3 {
			res := mustRetrieve(t, r, q)
			if st := res.Sources[spi.SourceGraph]; st.Status != retriever.StatusCallerDeadline || !strings.Contains(st.Error, "budget") || res.Degraded {
				t.Fatalf("graph = %+v, degraded %v; want the query's own budget (caller_deadline), not degraded", st, res.Degraded)
			}
		}
		if b.State() != breaker.Closed {
			t.Fatalf("breaker %v after budget timeouts, want closed (the caller's limit says nothing about the source)", b.State())
		}
	})
}
