package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/ragd/ragd/spi"
)

// ErrConfig is wrapped by every Config.Validate error.
var ErrConfig = errors.New("ingest: invalid config")

// Defaults for zero Config fields.
const (
	DefaultBatchSize    = 64
	DefaultEmbedBatch   = 64
	DefaultRecordName   = spi.SourceVector
	DefaultApplyBatch   = 1000
	DefaultPoll         = 250 * time.Millisecond
	DefaultApplyTimeout = 30 * time.Second
	DefaultRetention    = 7 * 24 * time.Hour
)

// Result statuses.
const (
	StatusOK       = "ok"        // the record holds the write; every derived store will apply it
	StatusFailed   = "failed"    // not written (see Code: outcome_unknown means "may have been")
	StatusNotFound = "not_found" // a delete of an id that does not exist (or is another tenant's)
)

// Per-store states in Result.Stores.
const (
	StoreOK      = "ok"      // the record store committed the write
	StoreCurrent = "current" // a derived store has applied it
	StorePending = "pending" // a derived store has not applied it yet; it will, from the log
	StoreDormant = "dormant" // a derived store nothing reads is not kept; it applies the log once woken
)

// NamedApplier is a derived store under the name used in results, logs and
// metrics (spi.SourceKeyword, spi.SourceGraph).
type NamedApplier struct {
	Name    string
	Applier spi.ChangeApplier
	// Dormant stores are not kept current: their applier does not run,
	// not even to read its checkpoint, until Pipeline.Wake names them, and
	// then catches up from the log (or, when compaction removed entries it
	// needs, from the record's documents). Meanwhile writes do not wait for
	// them, compaction does not wait for them, and checks skip them. For a
	// store the configuration never reads (the embedded graph with the
	// graph source and its expansion off), so ingestion does not pay for it.
	Dormant bool
	// Shared stores are written by every process of the record (replicas
	// on one PostgreSQL share one Neo4j). With a record that offers
	// spi.ApplyLeaser, only the process holding the store's lease applies
	// the log to it; the others follow its checkpoint (for status and
	// waits), so each write is applied once, not once per replica.
	Shared bool
	// ApplyBatch bounds the log entries this store applies at once (0:
	// Config.ApplyBatch). A remote store whose every apply pays a fixed
	// cost (OpenSearch waits for a refresh) takes larger batches; a batch
	// that runs out of time still halves (tailer.fit).
	ApplyBatch int
}

// EntityExtractor finds entity names in a document that carries none.
// Implementations must be safe for concurrent use and deterministic.
type EntityExtractor interface {
	Extract(ctx context.Context, doc spi.Document) ([]string, error)
}

// Config wires a Pipeline.
type Config struct {
	// Record is the system of record (the vector store): a write is
	// accepted once Record has committed it. Derived stores need a Record
	// with a change log (spi.ChangeLog); without one (keyword-only
	// deployments) ownership is checked before the write, not inside it.
	Record spi.Indexer
	// RecordName names Record in results; default "vector".
	RecordName string
	// Derived stores (keyword, graph) apply the record's change log.
	Derived []NamedApplier
	// Embedder makes vectors for documents that carry none. Nil means
	// documents are stored without vectors unless they bring one.
	Embedder spi.Embedder
	// Dimension is the vector length documents must have; zero means
	// Embedder.Dimension(). If Record reports spi.Dimensioner, it must agree.
	Dimension int
	// Extractor fills Entities of documents that have none; optional.
	Extractor EntityExtractor
	// EmbedText is the text embedded for a document; nil means the title and
	// the text joined by a blank line.
	EmbedText func(spi.Document) string
	// BatchSize bounds one record commit; default 64.
	BatchSize int
	// EmbedBatch bounds one Embed call; default 64. It is kept small
	// whatever BatchSize is: a model on a CPU takes seconds for 64 texts,
	// and the texts of a finished call are kept (their vectors reach the
	// vector cache) even when the request's deadline cuts off the rest, so
	// a retry of a large request resumes instead of starting over.
	EmbedBatch int
	// Limits bound each document.
	Limits Limits
	// ApplyBatch bounds the log entries a derived store applies at once;
	// default 1000 (a store that cannot apply a batch in ApplyTimeout gets
	// smaller ones, tailer.fit). Against 256, Neo4j spent 0.21 instead of
	// 0.28 ms of CPU per document (BenchmarkApplyChanges), and a servers
	// bulk load reached every store current sooner (README, "Writes in
	// servers mode").
	ApplyBatch int
	// Poll is how often a derived store looks for entries appended by other
	// processes (replicas); this pipeline's own writes wake it at once.
	// Default 250ms.
	Poll time.Duration
	// ApplyTimeout bounds one apply call to a derived store; default 30s.
	ApplyTimeout time.Duration
	// Retention is how long applied log entries are kept; default 7 days,
	// negative keeps them forever. See Pipeline.Compact.
	Retention time.Duration
	// Registerer receives the log metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger receives ids, store names and errors, never document content;
	// nil discards.
	Logger *slog.Logger
	// Now stamps UpdatedAt on documents without one; nil means time.Now.
	Now func() time.Time
	// TracerProvider makes the spans of each write and of each apply (see
	// trace.go); nil makes none.
	TracerProvider trace.TracerProvider
}

// Validate reports a configuration New would reject.
func (c Config) Validate() error {
	if c.Record == nil {
		return fmt.Errorf("%w: no record store configured", ErrConfig)
	}
	if _, ok := c.Record.(spi.ChangeLog); !ok && len(c.Derived) > 0 {
		return fmt.Errorf("%w: derived stores need a record store with a change log (a vector store)", ErrConfig)
	}
	names := map[string]bool{cmp.Or(c.RecordName, DefaultRecordName): true}
	for i, d := range c.Derived {
		switch {
		case d.Name == "":
			return fmt.Errorf("%w: derived store %d has no name", ErrConfig, i)
		case d.Applier == nil:
			return fmt.Errorf("%w: derived store %q has no applier", ErrConfig, d.Name)
		case names[d.Name]:
			return fmt.Errorf("%w: store name %q used twice", ErrConfig, d.Name)
		}
		names[d.Name] = true
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"batch_size", int64(c.BatchSize)}, {"embed_batch", int64(c.EmbedBatch)}, {"dimension", int64(c.Dimension)}, {"apply_batch", int64(c.ApplyBatch)},
		{"poll", int64(c.Poll)}, {"apply_timeout", int64(c.ApplyTimeout)},
	} {
		if f.v < 0 {
			return fmt.Errorf("%w: %s must be >= 0, got %d", ErrConfig, f.name, f.v)
		}
	}
	if c.Embedder != nil && c.Dimension != 0 && c.Dimension != c.Embedder.Dimension() {
		return fmt.Errorf("%w: dimension %d differs from the embedder's %d", ErrConfig, c.Dimension, c.Embedder.Dimension())
	}
	dim := c.Dimension
	if dim == 0 && c.Embedder != nil {
		dim = c.Embedder.Dimension()
	}
	if d, ok := c.Record.(spi.Dimensioner); ok && dim != 0 && d.Dimension() != dim {
		return fmt.Errorf("%w: the vector store holds %d-dimensional vectors but the embedder makes %d: re-create the store or configure a matching embedder", ErrConfig, d.Dimension(), dim)
	}
	return c.Limits.Validate()
}

// WriteOptions qualify one Upsert or Delete.
type WriteOptions struct {
	// Tenant, when set, is the writer's tenant: documents that name no
	// tenant get it, documents naming another fail with tenant_forbidden,
	// and deletes reach only its documents (others read as not_found).
	Tenant string
	// Wait, when positive, delays the answer until every derived store has
	// applied the writes or Wait has passed, whichever comes first. The
	// results say which stores are current either way.
	Wait time.Duration
}

// Pipeline is the write path shared by POST /v1/documents, `ragd ingest`
// and `ragd eval`: validate, embed, extract entities, commit to the record
// store (which appends to its change log), and answer. Derived stores apply
// the log in the background (Run). It is safe for concurrent use.
type Pipeline struct {
	record     recordWriter
	recordName string
	log        spi.ChangeLog // nil without a change log
	tailers    []*tailer
	embedder   spi.Embedder
	extractor  EntityExtractor
	embedText  func(spi.Document) string
	dim        int
	batch      int
	embedBatch int
	limits     Limits
	retention  time.Duration
	logger     *slog.Logger
	now        func() time.Time
	metrics    *metrics
	progress   *embedProgress
	tracer     trace.Tracer
	// compactMu makes Compact and Wake take turns, so that a compaction
	// that left a dormant store out never runs past its waking.
	compactMu sync.Mutex
	// checkWaitHook, when set (tests), runs each time a check waits for a
	// shared store's lease holder (check.go, follow), before it waits.
	checkWaitHook func(store string)
}

// New validates cfg and returns a Pipeline. Call Run to start applying the
// log to the derived stores.
func New(cfg Config) (*Pipeline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Pipeline{
		recordName: cmp.Or(cfg.RecordName, DefaultRecordName),
		embedder:   cfg.Embedder,
		extractor:  cfg.Extractor,
		embedText:  cfg.EmbedText,
		dim:        cfg.Dimension,
		batch:      cmp.Or(cfg.BatchSize, DefaultBatchSize),
		embedBatch: cmp.Or(cfg.EmbedBatch, DefaultEmbedBatch),
		limits:     cfg.Limits.WithDefaults(),
		retention:  cmp.Or(cfg.Retention, DefaultRetention),
		logger:     cfg.Logger,
		now:        cfg.Now,
		tracer:     newTracer(cfg.TracerProvider),
	}
	if p.dim == 0 && p.embedder != nil {
		p.dim = p.embedder.Dimension()
	}
	if p.embedText == nil {
		p.embedText = DefaultEmbedText
	}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	if l, ok := cfg.Record.(spi.ChangeLog); ok {
		p.log, p.record = l, l
	} else {
		p.record = newDirectRecord(cfg.Record)
	}
	p.progress = &embedProgress{now: p.now}
	var err error
	stores := make([]string, len(cfg.Derived))
	for i, d := range cfg.Derived {
		stores[i] = d.Name
	}
	if p.metrics, err = newMetrics(cfg.Registerer, p, stores); err != nil {
		return nil, err
	}
	if err := p.progress.register(cfg.Registerer); err != nil {
		return nil, fmt.Errorf("ingest: metrics: %w", err)
	}
	for _, d := range cfg.Derived {
		t := &tailer{
			p: p, name: d.Name, store: d.Applier, shared: d.Shared,
			batch:   cmp.Or(d.ApplyBatch, cfg.ApplyBatch, DefaultApplyBatch),
			poll:    cmp.Or(cfg.Poll, DefaultPoll),
			timeout: cmp.Or(cfg.ApplyTimeout, DefaultApplyTimeout),
			wake:    make(chan struct{}, 1),
			moved:   make(chan struct{}),
			awake:   make(chan struct{}),
		}
		if !d.Dormant {
			close(t.awake)
		}
		p.tailers = append(p.tailers, t)
	}
	return p, nil
}

// DefaultEmbedText embeds the title and the text separated by a blank line
// (either alone when the other is empty).
func DefaultEmbedText(d spi.Document) string {
	switch {
	case d.Title == "":
		return d.Text
	case d.Text == "":
		return d.Title
	}
	return d.Title + "\n\n" + d.Text
}

// EmbedStatus reports the embedding progress of the writes in flight.
func (p *Pipeline) EmbedStatus() EmbedStatus { return p.progress.status() }

// RecordName is the name of the store acting as the system of record.
func (p *Pipeline) RecordName() string { return p.recordName }

// Dimension is the vector length documents are checked against (0 when
// there is neither an embedder nor a configured dimension).
func (p *Pipeline) Dimension() int { return p.dim }

// DerivedNames lists the derived stores in configuration order.
func (p *Pipeline) DerivedNames() []string {
	names := make([]string, len(p.tailers))
	for i, t := range p.tailers {
		names[i] = t.name
	}
	return names
}

// Upsert writes docs and returns one Result per input document, in order.
//
// Each document is validated on its own, once; an invalid one fails with a
// Code* code while the others proceed. Documents without a vector keep
// the stored one when their embedded text is unchanged (reuseStored); the
// others are embedded in batches. Documents without entities get them from the
// Extractor. The record store then commits them, in batches, together with
// their log entries; ownership is decided inside that transaction (an id
// held by another tenant fails with id_conflict, which does not say whose
// it is). A batch the record rejects as invalid is bisected, so only the
// documents it cannot hold fail. The answer comes once the record has
// committed; derived stores apply the log on their own, and opts.Wait
// waits for them. Input documents are not modified.
func (p *Pipeline) Upsert(ctx context.Context, docs []spi.Document, opts WriteOptions) []Result {
	res := make([]Result, len(docs))
	work := make([]spi.Document, len(docs))
	copy(work, docs)
	var valid []int
	seen := make(map[string]int, len(docs))
	for i := range work {
		res[i].ID = work[i].ID
		if opts.Tenant != "" {
			switch work[i].Tenant {
			case "":
				work[i].Tenant = opts.Tenant
			case opts.Tenant:
			default:
				fail(&res[i], CodeTenantForbidden, "the document names a tenant this writer may not write to")
				continue
			}
		}
		if e := validate(&work[i], p.limits, p.dim); e != nil {
			fail(&res[i], e.code, e.msg)
			continue
		}
		if first, dup := seen[work[i].ID]; dup {
			fail(&res[i], CodeDuplicateID, fmt.Sprintf("id appears earlier in the batch (document %d)", first))
			continue
		}
		seen[work[i].ID] = i
		valid = append(valid, i)
	}
	ectx, endEmbed := p.storeSpan(ctx, spanEmbed, "embedder", len(valid))
	n := len(valid)
	valid = p.embed(ectx, work, res, valid)
	endEmbed(n - len(valid))
	p.extract(ctx, work, valid)
	now := p.now().UTC()
	writes := make([]spi.Write, len(valid))
	for k, i := range valid {
		if work[i].UpdatedAt.IsZero() {
			work[i].UpdatedAt = now
		}
		writes[k] = spi.Write{Op: spi.OpUpsert, Doc: work[i], Scope: opts.Tenant, KeepTenant: true}
	}
	p.commit(ctx, writes, valid, res, opts)
	return res
}

// Delete removes ids and returns one Result per input id. The record store
// commits the deletes (with their log entries, the tombstones); derived
// stores apply them from the log. An id that does not exist, or belongs to
// another tenant than opts.Tenant, is "not_found".
func (p *Pipeline) Delete(ctx context.Context, ids []string, opts WriteOptions) []Result {
	res := make([]Result, len(ids))
	var idx []int
	var writes []spi.Write
	first := map[string]int{}
	for i, id := range ids {
		res[i].ID = id
		if e := checkStoredID(id, p.limits.MaxIDBytes); e != nil {
			fail(&res[i], e.code, e.msg)
			continue
		}
		if j, dup := first[id]; dup {
			fail(&res[i], CodeDuplicateID, fmt.Sprintf("id appears earlier in the batch (id %d)", j))
			continue
		}
		first[id] = i
		idx = append(idx, i)
		writes = append(writes, spi.Write{Op: spi.OpDelete, Doc: spi.Document{ID: id}, Scope: opts.Tenant})
	}
	p.commit(ctx, writes, idx, res, opts)
	return res
}

func fail(r *Result, code, msg string) {
	r.Status, r.Code, r.Error = StatusFailed, code, msg
}

// commit writes writes (writes[k] belongs to res[idx[k]]) in batches,
// fills the results, wakes the appliers and, when asked, waits for them.
func (p *Pipeline) commit(ctx context.Context, writes []spi.Write, idx []int, res []Result, opts WriteOptions) {
	var top uint64
	var done []int
	rctx, endRecord := p.storeSpan(ctx, spanRecord, p.recordName, len(writes))
	for start := 0; start < len(writes); start += p.batch {
		end := min(start+p.batch, len(writes))
		outs, errs := p.commitBisect(rctx, writes[start:end])
		for k := range outs {
			i := idx[start+k]
			p.settle(ctx, &res[i], writes[start+k].Op, outs[k], errs[k])
			if res[i].Status == StatusOK {
				top = max(top, res[i].Version)
				done = append(done, i)
			}
		}
	}
	endRecord(len(writes) - len(done))
	if len(done) == 0 {
		return
	}
	p.metrics.committed(len(done))
	for _, t := range p.tailers {
		t.poke()
	}
	if opts.Wait > 0 && top > 0 {
		p.waitApplied(ctx, top, opts.Wait)
	}
	for _, i := range done {
		r := &res[i]
		r.Stores = map[string]string{p.recordName: StoreOK}
		for _, t := range p.tailers {
			switch {
			case t.dormant():
				r.Stores[t.name] = StoreDormant
			case t.applied() >= r.Version:
				r.Stores[t.name] = StoreCurrent
			default:
				r.Stores[t.name] = StorePending
			}
		}
	}
}

// commitBisect commits writes and returns each write's outcome, or the
// error that failed it. A batch the record rejects as invalid is split in
// halves until the culprits stand alone.
func (p *Pipeline) commitBisect(ctx context.Context, writes []spi.Write) ([]spi.WriteResult, []error) {
	outs := make([]spi.WriteResult, len(writes))
	errs := make([]error, len(writes))
	if len(writes) == 0 {
		return outs, errs
	}
	o, err := p.record.Commit(ctx, writes)
	switch {
	case err == nil && len(o) == len(writes):
		return o, errs
	case err == nil:
		err = fmt.Errorf("%w: the record returned %d outcomes for %d writes", spi.ErrUnavailable, len(o), len(writes))
	case errors.Is(err, spi.ErrInvalidQuery) && len(writes) > 1 && ctx.Err() == nil:
		half := len(writes) / 2
		o1, e1 := p.commitBisect(ctx, writes[:half])
		o2, e2 := p.commitBisect(ctx, writes[half:])
		return append(o1, o2...), append(e1, e2...)
	}
	p.logger.Warn("ingest: record commit failed", "store", p.recordName, "writes", len(writes), "first_id", writes[0].Doc.ID, "err", err)
	for i := range errs {
		errs[i] = err
	}
	return outs, errs
}

// settle turns one write's outcome into its result.
func (p *Pipeline) settle(ctx context.Context, r *Result, op spi.Op, o spi.WriteResult, err error) {
	if err == nil {
		err = o.Err
	}
	switch {
	case err == nil:
		r.Status, r.Version, r.Unchanged = StatusOK, o.Version, op == spi.OpUpsert && !o.Changed
	case errors.Is(err, spi.ErrNotFound) && op == spi.OpDelete:
		r.Status = StatusNotFound
	case errors.Is(err, spi.ErrTenantConflict) && op == spi.OpUpsert:
		fail(r, CodeIDConflict, "this id cannot be used: choose another id")
	default:
		fail(r, recordCode(ctx, err), safeError(ctx, p.recordName, err))
	}
}

// waitApplied waits until every derived store that is not dormant has
// applied seq, at most d.
func (p *Pipeline) waitApplied(ctx context.Context, seq uint64, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for _, t := range p.tailers {
		if !t.dormant() && !t.waitFor(ctx, seq) {
			return
		}
	}
}

// ErrUnknownStore means Wake or WaitApplied named no derived store.
var ErrUnknownStore = errors.New("ingest: no such derived store")

// Wake starts keeping a dormant derived store (NamedApplier.Dormant)
// current: its applier loads the store's checkpoint and applies the log
// from there. Waking a store that is awake does nothing. Wake does not
// wait for the store to catch up; WaitApplied does.
func (p *Pipeline) Wake(name string) error {
	t := p.tailer(name)
	if t == nil {
		return fmt.Errorf("%w: %q", ErrUnknownStore, name)
	}
	// Not while Compact decides what to remove without this store.
	p.compactMu.Lock()
	defer p.compactMu.Unlock()
	t.wakeOnce.Do(func() {
		if t.dormant() {
			close(t.awake)
			p.logger.Info("ingest: woke a dormant derived store; it catches up from the change log", "store", name)
		}
	})
	return nil
}

// Dormant reports whether the derived store name is dormant (not woken).
func (p *Pipeline) Dormant(name string) bool {
	t := p.tailer(name)
	return t != nil && t.dormant()
}

// Applied is the derived store name's checkpoint as its applier last
// loaded or moved it (0 for a dormant store, or an unknown name).
func (p *Pipeline) Applied(name string) uint64 {
	if t := p.tailer(name); t != nil {
		return t.applied()
	}
	return 0
}

// WaitApplied waits until the derived store name has applied the log up
// to seq, or ctx ends (its error is returned). Run must be running, and a
// dormant store must be woken, for this to happen.
func (p *Pipeline) WaitApplied(ctx context.Context, name string, seq uint64) error {
	t := p.tailer(name)
	if t == nil {
		return fmt.Errorf("%w: %q", ErrUnknownStore, name)
	}
	if !t.waitFor(ctx, seq) {
		return ctx.Err()
	}
	return nil
}

// Head is the change log's last sequence (0 without a log).
func (p *Pipeline) Head(ctx context.Context) (uint64, error) {
	if p.log == nil {
		return 0, nil
	}
	ls, err := p.log.LogState(ctx)
	if err != nil {
		return 0, fmt.Errorf("ingest: head: %w", err)
	}
	return ls.Last, nil
}

func (p *Pipeline) tailer(name string) *tailer {
	for _, t := range p.tailers {
		if t.name == name {
			return t
		}
	}
	return nil
}

// safeError is the per-document message for a store or embedder failure.
// Results travel to API clients, so a backend's own text (driver messages
// with hosts and ports, server internals) is replaced by a fixed phrase;
// the full error goes to the log. A rejection (spi.ErrInvalidQuery) keeps
// its text: it comes from ragd's own validation and says what to fix.
func safeError(ctx context.Context, name string, err error) string {
	switch {
	case errors.Is(err, spi.ErrOutcomeUnknown):
		return name + ": the write was sent but not confirmed; it may have been stored: retry it (an identical retry changes nothing)"
	case errors.Is(err, spi.ErrInvalidQuery):
		return name + " rejected the document: " + trimPrefixes(err.Error(), name+": ", "vector: commit: ", "vector/embedded: commit: ")
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return name + ": canceled before the write finished; nothing was written"
	case errors.Is(err, spi.ErrUnavailable):
		return name + ": unavailable; nothing was written"
	}
	return name + ": write failed; nothing was written (details in the server log)"
}

func trimPrefixes(s string, prefixes ...string) string {
	for _, pre := range prefixes {
		if len(s) >= len(pre) && s[:len(pre)] == pre {
			s = s[len(pre):]
		}
	}
	return s
}

func recordCode(ctx context.Context, err error) string {
	switch {
	case errors.Is(err, spi.ErrOutcomeUnknown):
		return CodeOutcomeUnknown
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return CodeCanceled
	case errors.Is(err, spi.ErrInvalidQuery):
		return CodeStoreRejected
	case errors.Is(err, spi.ErrUnavailable):
		return CodeStoreUnavailable
	}
	return CodeStoreFailed
}

// embed fills the vectors of valid documents that lack one and returns the
// indices that are still good.
func (p *Pipeline) embed(ctx context.Context, work []spi.Document, res []Result, valid []int) []int {
	if p.embedder == nil {
		return valid
	}
	var need []int
	for _, i := range valid {
		if len(work[i].Vector) == 0 {
			need = append(need, i)
		}
	}
	p.progress.queued(len(need))
	need = p.reuseStored(ctx, work, need)
	// Each embedding call is one tenant's (spi.WithTenant): the vector
	// cache keeps each tenant's texts apart, so one tenant's write never
	// hits a text another wrote.
	for _, group := range byTenant(work, need) {
		tctx := spi.WithTenant(ctx, work[group[0]].Tenant)
		for chunk := range slices.Chunk(group, p.embedBatch) {
			p.embedChunk(tctx, work, res, chunk)
		}
	}
	return slices.DeleteFunc(valid, func(i int) bool { return res[i].Status == StatusFailed })
}

// byTenant splits the indices idx of work by the documents' tenant, in the
// order each tenant first appears, keeping their order within a tenant.
func byTenant(work []spi.Document, idx []int) [][]int {
	if len(idx) == 0 {
		return nil
	}
	pos := map[string]int{}
	var groups [][]int
	for _, i := range idx {
		t := work[i].Tenant
		g, ok := pos[t]
		if !ok {
			g = len(groups)
			pos[t] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// reuseStored gives each document of need whose embedded text (embedText)
// equals the stored document's the stored vector, and returns the ones
// left to embed. Embedding is the expensive step of a write: a retry, a
// re-ingest of the same corpus or a change of metadata alone embeds
// nothing. The commit still compares the whole content (spi.ContentHash),
// so an identical document is reported unchanged and appends no log
// entry, exactly as before. The stored vector is the configured
// embedder's: the vector store refuses to open on vectors of another
// embedder (docs/embedders.md), and a vector the client once sent with the
// document is kept the same way, because the text it belongs to has not
// changed. Without a change log, or when the record cannot be read, every
// document is embedded.
func (p *Pipeline) reuseStored(ctx context.Context, work []spi.Document, need []int) []int {
	if p.log == nil || len(need) == 0 {
		return need
	}
	rest := make([]int, 0, len(need))
	reused := 0
	for chunk := range slices.Chunk(need, p.batch) {
		ids := make([]string, len(chunk))
		for k, i := range chunk {
			ids[k] = work[i].ID
		}
		cur, err := p.log.Current(ctx, ids)
		if err != nil {
			p.logger.Debug("ingest: could not read the stored documents; embedding them all", "docs", len(chunk), "err", err)
			rest = append(rest, chunk...)
			continue
		}
		stored := make(map[string]*spi.Document, len(cur))
		for _, c := range cur {
			if c.Doc != nil {
				stored[c.ID] = c.Doc
			}
		}
		for _, i := range chunk {
			d := stored[work[i].ID]
			if d != nil && len(d.Vector) == p.dim && p.embedText(*d) == p.embedText(work[i]) {
				work[i].Vector = d.Vector
				reused++
				continue
			}
			rest = append(rest, i)
		}
	}
	p.progress.keptStored(reused)
	return rest
}

func (p *Pipeline) embedChunk(ctx context.Context, work []spi.Document, res []Result, chunk []int) {
	texts := make([]string, len(chunk))
	for k, i := range chunk {
		texts[k] = p.embedText(work[i])
	}
	start := p.now()
	vecs, err := p.embedder.Embed(ctx, texts)
	if err == nil && len(vecs) != len(texts) {
		err = fmt.Errorf("%w: embedder returned %d vectors for %d texts", spi.ErrUnavailable, len(vecs), len(texts))
	}
	if err == nil {
		for k := range vecs {
			if verr := checkVector(vecs[k], p.dim); verr != nil {
				err = fmt.Errorf("%w: embedder output: %s", spi.ErrUnavailable, verr.msg)
				break
			}
		}
	}
	if err != nil {
		// One over-long text makes some servers reject the whole batch:
		// find the culprit by embedding the texts one at a time.
		if errors.Is(err, spi.ErrInvalidQuery) && len(chunk) > 1 && ctx.Err() == nil {
			for _, i := range chunk {
				p.embedChunk(ctx, work, res, []int{i})
			}
			return
		}
		p.progress.done(len(chunk), start, false)
		code := CodeEmbedderUnavailable
		switch {
		case ctx.Err() != nil:
			code = CodeCanceled
		case errors.Is(err, spi.ErrInvalidQuery):
			code = CodeEmbedderRejected
		}
		p.logger.Warn("ingest: embed failed", "docs", len(chunk), "first_id", work[chunk[0]].ID, "err", err)
		for _, i := range chunk {
			fail(&res[i], code, safeError(ctx, "embedder", err))
		}
		return
	}
	p.progress.done(len(chunk), start, true)
	for k, i := range chunk {
		work[i].Vector = vecs[k]
	}
}

func (p *Pipeline) extract(ctx context.Context, work []spi.Document, valid []int) {
	if p.extractor == nil {
		return
	}
	for _, i := range valid {
		if len(work[i].Entities) > 0 {
			continue
		}
		ents, err := p.extractor.Extract(ctx, work[i])
		if err != nil {
			p.logger.Warn("ingest: entity extraction failed; storing without entities", "id", work[i].ID, "err", err)
			continue
		}
		if len(ents) > p.limits.MaxEntities {
			ents = ents[:p.limits.MaxEntities]
		}
		work[i].Entities = ents
	}
}
