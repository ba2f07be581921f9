package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ragd/ragd/embedder/builtin/modelcache"
	"github.com/ragd/ragd/spi"
)

// sourceNames are the retriever's source names valid under
// retriever.sources.
var sourceNames = spi.RetrievalSources()

// breakerNames are the breakers ragd mints, valid under breakers.overrides.
var breakerNames = spi.Backends()

var publicEndpoints = []string{"health", "ready", "metrics", "openapi"}

// MaxWeight bounds a fusion weight; it is retriever.MaxWeight, which keeps
// fused scores finite (a test checks that the two agree).
const MaxWeight = 1000

func validWeight(w float64) bool { return w >= 0 && w <= MaxWeight }

// Validate checks every value and returns all problems joined, each an
// *Error naming its key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &Error{Key: key, Message: fmt.Sprintf(format, args...)})
	}
	positive := func(key string, v int) {
		if v <= 0 {
			bad(key, "must be > 0, got %d", v)
		}
	}

	if strings.TrimSpace(c.DataDir) == "" {
		bad("data_dir", "must not be empty")
	}

	s := c.Server
	if _, _, err := net.SplitHostPort(s.Listen); err != nil {
		bad("server.listen", "must be host:port, got %q", s.Listen)
	}
	if s.BodyLimitBytes < 1024 {
		bad("server.body_limit_bytes", "must be at least 1024, got %d", s.BodyLimitBytes)
	}
	if s.QueryBodyLimitBytes < 1024 {
		bad("server.query_body_limit_bytes", "must be at least 1024, got %d", s.QueryBodyLimitBytes)
	}
	positive("server.read_header_timeout_s", s.ReadHeaderTimeoutS)
	positive("server.read_timeout_s", s.ReadTimeoutS)
	positive("server.write_timeout_s", s.WriteTimeoutS)
	positive("server.idle_timeout_s", s.IdleTimeoutS)
	positive("server.request_timeout_s", s.RequestTimeoutS)
	if s.ShutdownGraceS < 0 {
		bad("server.shutdown_grace_s", "must be >= 0, got %d", s.ShutdownGraceS)
	}
	positive("server.max_in_flight", s.MaxInFlight)
	if s.MemoryLimitMB < 0 {
		bad("server.memory_limit_mb", "must be >= 0 (0: no limit), got %d", s.MemoryLimitMB)
	}

	v := c.Backends.Vector
	switch v.Kind {
	case KindEmbedded:
		if v.Dir == "" {
			bad("backends.vector.dir", "must be set for kind %q", v.Kind)
		}
		if v.ANN.MinRows < -1 {
			bad("backends.vector.ann.min_rows", "must be >= -1 (-1: never, 0: the default), got %d", v.ANN.MinRows)
		}
		if !(v.ANN.Probe >= 0) || math.IsInf(v.ANN.Probe, 0) {
			bad("backends.vector.ann.probe", "must be a finite number >= 0 (0: the default), got %v", v.ANN.Probe)
		}
	case KindPgvector:
		if v.DSN == "" {
			bad("backends.vector.dsn", "must be set for kind %q", v.Kind)
		}
		if v.Table == "" || strings.ContainsAny(v.Table, " ;\"'") {
			bad("backends.vector.table", "must be a plain table name, got %q", v.Table)
		}
		positive("backends.vector.connect_timeout_ms", v.ConnectTimeoutMS)
		positive("backends.vector.max_conns", v.MaxConns)
		positive("backends.vector.ef_search", v.EFSearch)
		if v.IndexBuildMemMB < 0 {
			bad("backends.vector.index_build_mem_mb", "must be >= 0, got %d", v.IndexBuildMemMB)
		}
		if v.ANN != (ANNConfig{}) {
			bad("backends.vector.ann", "is the embedded store's IVF index; for kind %q, recall against cost is ef_search", v.Kind)
		}
	case KindNone:
	default:
		bad("backends.vector.kind", "must be one of %s, got %q", quoteList([]string{KindEmbedded, KindPgvector, KindNone}), v.Kind)
	}
	if v.Kind != KindNone && !oneOf(v.Distance, "cosine", "l2", "inner_product") {
		bad("backends.vector.distance", `must be one of "cosine", "l2", "inner_product", got %q`, v.Distance)
	}

	k := c.Backends.Keyword
	switch k.Kind {
	case KindBleve:
		if k.Dir == "" {
			bad("backends.keyword.dir", "must be set for kind %q", k.Kind)
		}
		if k.TitleBoost <= 0 {
			bad("backends.keyword.title_boost", "must be > 0, got %g", k.TitleBoost)
		}
		if k.SettleAfterMS < 0 {
			bad("backends.keyword.settle_after_ms", "must be >= 0, got %d", k.SettleAfterMS)
		}
		if k.SettleWithinS < -1 {
			bad("backends.keyword.settle_within_s", "must be >= 0, or -1 for no bound, got %d", k.SettleWithinS)
		}
	case KindOpenSearch:
		c.validateOpenSearch(bad)
	case KindNone:
	default:
		bad("backends.keyword.kind", "must be one of %s, got %q", quoteList([]string{KindBleve, KindOpenSearch, KindNone}), k.Kind)
	}

	g := c.Backends.Graph
	switch g.Kind {
	case KindEmbedded:
		if g.Dir == "" {
			bad("backends.graph.dir", "must be set for kind %q", g.Kind)
		}
	case KindNeo4j:
		if u, err := url.Parse(g.URI); err != nil || u.Host == "" || !oneOf(u.Scheme, "bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc") {
			bad("backends.graph.uri", "must be a bolt:// or neo4j:// URI, got %q", g.URI)
		}
		positive("backends.graph.connect_timeout_ms", g.ConnectTimeoutMS)
	case KindNone:
	default:
		bad("backends.graph.kind", "must be one of %s, got %q", quoteList([]string{KindEmbedded, KindNeo4j, KindNone}), g.Kind)
	}
	if g.MaxDegree < 0 {
		bad("backends.graph.max_degree", "must be >= 0, got %d", g.MaxDegree)
	}
	if g.ApplyBatch < 0 {
		bad("backends.graph.apply_batch", "must be >= 0 (0: the default), got %d", g.ApplyBatch)
	}
	if v.Kind == KindNone && k.Kind == KindNone && g.Kind == KindNone {
		bad("backends", "at least one backend must be configured")
	}

	e := c.Embedder
	kinds := []string{KindBuiltin, KindHashing, KindOpenAI}
	switch e.Kind {
	case KindHashing:
	case KindBuiltin:
		if e.ModelDir == "" {
			if _, err := modelcache.Canonical(e.BuiltinModel()); err != nil {
				bad("embedder.model", "%v", err)
			}
		}
		for _, f := range []struct {
			key string
			v   int
		}{{"embedder.threads", e.Threads}, {"embedder.max_seq_length", e.MaxSeqLength}, {"embedder.pull_timeout_s", e.PullTimeoutS}} {
			if f.v < 0 {
				bad(f.key, "must be >= 0, got %d", f.v)
			}
		}
		if e.MaxSeqLength == 1 {
			bad("embedder.max_seq_length", "must leave room for [CLS] and [SEP] (at least 2), got 1")
		}
		if !oneOf(e.Precision, "", PrecisionFP32, PrecisionInt8) {
			bad("embedder.precision", "must be one of %s, got %q", quoteList([]string{PrecisionFP32, PrecisionInt8}), e.Precision)
		}
	case KindOpenAI:
		if u, err := url.Parse(e.BaseURL); err != nil || u.Host == "" || !oneOf(u.Scheme, "http", "https") {
			bad("embedder.base_url", "must be an http(s) URL, got %q", e.BaseURL)
		}
		if e.Model == "" {
			bad("embedder.model", "must be set for kind %q", e.Kind)
		}
		positive("embedder.timeout_ms", e.TimeoutMS)
		positive("embedder.batch_size", e.BatchSize)
		if e.MaxRetries < 0 {
			bad("embedder.max_retries", "must be >= 0, got %d", e.MaxRetries)
		}
		if e.Dimension == 0 {
			bad("embedder.dimension", "must be set for kind %q (the model's vector length)", e.Kind)
		}
	default:
		bad("embedder.kind", "must be one of %s, got %q", quoteList(kinds), e.Kind)
	}
	if e.Dimension < 0 || e.Dimension > 16000 {
		bad("embedder.dimension", "must be between 1 and 16000 (or left out), got %d", e.Dimension)
	}
	for _, f := range []struct {
		key string
		v   int
	}{{"embedder.document_concurrency", e.DocumentConcurrency}, {"embedder.cache.max_mb", e.Cache.MaxMB}, {"embedder.cache.query_entries", e.Cache.QueryEntries}} {
		if f.v < 0 {
			bad(f.key, "must be >= 0, got %d", f.v)
		}
	}
	if e.Cache.MaxMB > 0 && strings.TrimSpace(e.Cache.Dir) == "" {
		bad("embedder.cache.dir", "must be set while embedder.cache.max_mb is above 0")
	}

	r := c.Retriever
	if !oneOf(r.Fusion, "rrf", "score", "dbsf") {
		bad("retriever.fusion", `must be one of "rrf", "score", "dbsf", got %q`, r.Fusion)
	}
	positive("retriever.rrf_k", r.RRFK)
	positive("retriever.max_limit", r.MaxLimit)
	positive("retriever.max_window", r.MaxWindow)
	if r.MaxOffset < 0 {
		bad("retriever.max_offset", "must be >= 0, got %d", r.MaxOffset)
	}
	if r.Limit < 1 || r.Limit > r.MaxLimit {
		bad("retriever.limit", "must be between 1 and max_limit (%d), got %d", r.MaxLimit, r.Limit)
	}
	if r.Window < 1 || r.Window > r.MaxWindow {
		bad("retriever.window", "must be between 1 and max_window (%d), got %d", r.MaxWindow, r.Window)
	}
	if r.MinSources < 1 || r.MinSources > 3 {
		bad("retriever.min_sources", "must be between 1 and 3, got %d", r.MinSources)
	}
	positive("retriever.budget_ms", r.BudgetMS)
	for _, name := range slices.Sorted(maps.Keys(r.Sources)) {
		sc := r.Sources[name]
		key := "retriever.sources." + name
		if !oneOf(name, sourceNames...) {
			bad(key, "unknown source; must be one of %s", quoteList(sourceNames))
			continue
		}
		if sc.K < 0 || sc.K > r.MaxWindow {
			bad(key+".k", "must be between 0 (use window) and max_window (%d), got %d", r.MaxWindow, sc.K)
		}
		if sc.Weight != nil && !validWeight(*sc.Weight) {
			bad(key+".weight", "must be between 0 and %d, got %g", MaxWeight, *sc.Weight)
		}
		if sc.TimeoutMS < 0 {
			bad(key+".timeout_ms", "must be >= 0, got %d", sc.TimeoutMS)
		}
	}
	x := r.Expand
	if x.Hops < 1 || x.Hops > 2 {
		bad("retriever.expand.hops", "must be 1 or 2, got %d", x.Hops)
	}
	positive("retriever.expand.seeds", x.Seeds)
	positive("retriever.expand.limit", x.Limit)
	positive("retriever.expand.timeout_ms", x.TimeoutMS)
	if x.Weight != nil && !validWeight(*x.Weight) {
		bad("retriever.expand.weight", "must be between 0 and %d, got %g", MaxWeight, *x.Weight)
	}

	validateBreaker := func(key string, b BreakerSettings, override bool) {
		if b.FailureThreshold < 0 || (!override && b.FailureThreshold == 0) {
			bad(key+".failure_threshold", "must be >= 1, got %d", b.FailureThreshold)
		}
		if b.ResetTimeoutS < 0 || (!override && b.ResetTimeoutS == 0) {
			bad(key+".reset_timeout_s", "must be > 0, got %g", b.ResetTimeoutS)
		}
		if b.HalfOpenMaxCalls < 0 || (!override && b.HalfOpenMaxCalls == 0) {
			bad(key+".half_open_max_calls", "must be >= 1, got %d", b.HalfOpenMaxCalls)
		}
		if b.SuccessThreshold < 0 || (!override && b.SuccessThreshold == 0) {
			bad(key+".success_threshold", "must be >= 1, got %d", b.SuccessThreshold)
		}
	}
	validateBreaker("breakers", c.Breakers.BreakerSettings, false)
	if c.Breakers.WarmupTimeoutS < 0 {
		bad("breakers.warmup_timeout_s", "must be >= 0 (0: no background probes), got %g", c.Breakers.WarmupTimeoutS)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Breakers.Overrides)) {
		if !oneOf(name, breakerNames...) {
			bad("breakers.overrides."+name, "unknown breaker; must be one of %s", quoteList(breakerNames))
			continue
		}
		validateBreaker("breakers.overrides."+name, c.Breakers.Overrides[name], true)
	}

	validateLimit := func(key string, l LimitSettings, override bool) {
		for _, f := range []struct {
			name string
			v    int
		}{{"min_limit", l.MinLimit}, {"max_limit", l.MaxLimit}, {"initial_limit", l.InitialLimit}} {
			if f.v < 0 || (!override && f.v == 0) {
				bad(key+"."+f.name, "must be >= 1, got %d", f.v)
			}
		}
	}
	validateLimit("concurrency", c.Concurrency.LimitSettings, false)
	if l := c.Concurrency.LimitSettings; l.MinLimit > l.MaxLimit || l.InitialLimit < l.MinLimit || l.InitialLimit > l.MaxLimit {
		bad("concurrency", "want min_limit <= initial_limit <= max_limit, got %d, %d, %d", l.MinLimit, l.InitialLimit, l.MaxLimit)
	}
	gated := spi.GatedSources()
	for _, name := range slices.Sorted(maps.Keys(c.Concurrency.Overrides)) {
		if !oneOf(name, gated...) {
			bad("concurrency.overrides."+name, "unknown source; must be one of %s", quoteList(gated))
			continue
		}
		validateLimit("concurrency.overrides."+name, c.Concurrency.Overrides[name], true)
	}
	if c.Retriever.EmbedTimeoutMS < 0 {
		bad("retriever.embed_timeout_ms", "must be >= 0, got %d", c.Retriever.EmbedTimeoutMS)
	}

	in := c.Ingest
	positive("ingest.batch_size", in.BatchSize)
	positive("ingest.max_docs_per_request", in.MaxDocsPerRequest)
	positive("ingest.max_ids_per_request", in.MaxIDsPerRequest)
	positive("ingest.max_text_bytes", in.MaxTextBytes)
	positive("ingest.apply_poll_ms", in.ApplyPollMS)
	if in.LogRetentionH < 0 {
		bad("ingest.log_retention_h", "must be >= 0 (0 keeps the log forever), got %d", in.LogRetentionH)
	}
	if c.Backends.Vector.Kind == KindNone && c.Backends.Keyword.Kind != KindNone && c.Backends.Graph.Kind != KindNone {
		bad("backends.graph", "a graph store needs a vector store: the vector store is the system of record whose change log the graph applies")
	}

	if c.AuthEnabled() && len(c.Auth.Keys) == 0 {
		bad("auth.keys", "auth is enabled but no keys are configured (add keys, or set auth.enabled: false explicitly)")
	}
	seen := map[string]bool{}
	tenantMetrics := false
	for i, key := range c.Auth.Keys {
		p := fmt.Sprintf("auth.keys[%d]", i)
		switch {
		case strings.TrimSpace(key.Key) != key.Key:
			// HTTP strips the whitespace around a header value (and ragd
			// the token's), so this key could never authenticate.
			bad(p+".key", "must not begin or end with whitespace: a request cannot send it, so the key would never authenticate")
		case strings.ContainsFunc(key.Key, unicode.IsControl):
			bad(p+".key", "must not hold a control character: an Authorization header cannot carry it")
		case strings.ContainsFunc(key.Key, func(r rune) bool { return r > unicode.MaxASCII }):
			// Header bytes beyond ASCII are sent as each client encodes
			// them (curl UTF-8, Python's http.client Latin-1, or not at
			// all), and U+200B or U+202E read in rag.yaml as another key.
			r, _ := utf8.DecodeRuneInString(key.Key[strings.IndexFunc(key.Key, func(r rune) bool { return r > unicode.MaxASCII }):])
			bad(p+".key", "must be ASCII, got U+%04X: clients send other characters in an Authorization header differently (UTF-8, Latin-1, or not at all), and some are invisible", r)
		case len(key.Key) < 16:
			bad(p+".key", "must be at least 16 characters")
		}
		// The name is what the timeline, the console and `ragd status`
		// show as who held or forced a breaker: the rule of a hold's
		// reason (no control character, nothing invisible, no
		// bidirectional override that would reorder what operators read).
		if err := spi.ValidateNote(key.Name); err != nil {
			bad(p+".name", "%s", strings.TrimPrefix(err.Error(), spi.ErrInvalidQuery.Error()+": "))
		}
		if seen[key.Key] && key.Key != "" {
			bad(p+".key", "duplicates another key")
		}
		seen[key.Key] = true
		if !oneOf(key.Role, Roles...) {
			bad(p+".role", "must be one of %s, got %q", quoteList(Roles), key.Role)
		}
		if key.Tenant != "" && key.Role == RoleMetrics {
			bad(p+".tenant", "a metrics key reads every tenant's figures and cannot be bound to a tenant")
		}
		if key.Tenant != "" && c.AuthEnabled() && slices.Contains(c.Auth.Public, "metrics") && !tenantMetrics {
			tenantMetrics = true
			bad("auth.public", "lists metrics while %s is bound to a tenant: /metrics counts every tenant's requests, writes and cache hits, which a tenant may not read; "+
				"take metrics out of auth.public (the default lists it) and scrape with a key not bound to a tenant (role metrics)", p)
		}
		if key.Tenant != "" {
			if err := spi.ValidateName(key.Tenant, spi.MaxNameBytes); err != nil {
				bad(p+".tenant", "must be a tenant name as documents carry it (%s)", strings.TrimPrefix(err.Error(), spi.ErrInvalidQuery.Error()+": "))
			}
		}
	}
	for i, p := range c.Auth.Public {
		if !oneOf(p, publicEndpoints...) {
			bad(fmt.Sprintf("auth.public[%d]", i), "must be one of %s, got %q", quoteList(publicEndpoints), p)
		}
	}

	if !oneOf(c.Log.Level, "debug", "info", "warn", "error") {
		bad("log.level", `must be one of "debug", "info", "warn", "error", got %q`, c.Log.Level)
	}
	c.Tracing.validate(bad)
	return errors.Join(errs...)
}

var indexPrefixRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// validateOpenSearch checks the keyword section of kind opensearch.
func (c *Config) validateOpenSearch(bad func(key, format string, args ...any)) {
	k := c.Backends.Keyword
	if len(k.Hosts) == 0 {
		bad("backends.keyword.hosts", "must name at least one node for kind %q", k.Kind)
	}
	for i, h := range k.Hosts {
		if u, err := url.Parse(h); err != nil || u.Host == "" || !oneOf(u.Scheme, "http", "https") {
			bad(fmt.Sprintf("backends.keyword.hosts[%d]", i), "must be an http:// or https:// URL, got %q", h)
		}
	}
	if k.IndexPrefix != "" && !indexPrefixRE.MatchString(k.IndexPrefix) {
		bad("backends.keyword.index_prefix", "must be 1-64 of a-z, 0-9, '_', '-', starting with a letter or digit, got %q", k.IndexPrefix)
	}
	if k.TitleBoost <= 0 {
		bad("backends.keyword.title_boost", "must be > 0, got %g", k.TitleBoost)
	}
	for _, f := range []struct {
		key string
		n   int
	}{{"shards", k.Shards}, {"replicas", k.Replicas}, {"connect_timeout_ms", k.ConnectTimeoutMS}, {"refresh_interval_ms", k.RefreshIntervalMS}} {
		if f.n < 0 {
			bad("backends.keyword."+f.key, "must be >= 0, got %d", f.n)
		}
	}
	if c.Backends.Vector.Kind == KindNone {
		bad("backends.keyword.kind", "%q is derived from the vector store's change log: backends.vector must be configured", k.Kind)
	}
}
