package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ragd/ragd/spi"
)

// ErrConfig is wrapped by every Config.Validate error.
var ErrConfig = errors.New("ingest: invalid config")

// Defaults for zero Config fields.
const (
	DefaultBatchSize      = 64
	DefaultMaxRepairQueue = 10000
	DefaultRecordName     = spi.SourceVector
)

// Result statuses.
const (
	StatusOK      = "ok"      // every store has the document
	StatusPartial = "partial" // the record store has it, a derived store does not (yet)
	StatusFailed  = "failed"  // not accepted: the record store does not have it
)

// Per-store statuses in Result.Stores.
const (
	StoreOK      = "ok"
	StoreFailed  = "failed"
	StoreSkipped = "skipped" // not attempted because the record store failed
)

// NamedIndexer is a store under the name used in results, logs and the
// repair queue (spi.SourceKeyword, spi.SourceGraph, ...).
type NamedIndexer struct {
	Name    string
	Indexer spi.Indexer
}

// EntityExtractor finds entity names in a document that carries none.
// Implementations must be safe for concurrent use and deterministic.
type EntityExtractor interface {
	Extract(ctx context.Context, doc spi.Document) ([]string, error)
}

// Config wires a Pipeline.
type Config struct {
	// Record is the system of record (the vector store): a document is
	// accepted only once Record has it. When nil, the first Derived store
	// is the record (keyword-only deployments).
	Record spi.Indexer
	// RecordName names Record in results; default "vector".
	RecordName string
	// Derived stores (keyword, graph) are written after the record. A
	// failure there makes the result partial and queues a repair.
	Derived []NamedIndexer
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
	// BatchSize bounds one Embed call and one store write; default 64.
	BatchSize int
	// Limits bound each document.
	Limits Limits
	// MaxRepairQueue bounds the queued repairs per derived store (default
	// 10000). Beyond it, failures are counted as dropped and the store
	// needs RebuildDerived.
	MaxRepairQueue int
	// Logger receives ids, store names and errors, never document content;
	// nil discards.
	Logger *slog.Logger
	// Now stamps UpdatedAt on documents without one; nil means time.Now.
	Now func() time.Time
	// TracerProvider makes the spans of each write (see trace.go); nil
	// makes none.
	TracerProvider trace.TracerProvider
}

// Validate reports a configuration New would reject.
func (c Config) Validate() error {
	if c.Record == nil && len(c.Derived) == 0 {
		return fmt.Errorf("%w: no store configured", ErrConfig)
	}
	names := map[string]bool{}
	if c.Record != nil {
		names[cmp.Or(c.RecordName, DefaultRecordName)] = true
	}
	for i, d := range c.Derived {
		switch {
		case d.Name == "":
			return fmt.Errorf("%w: derived store %d has no name", ErrConfig, i)
		case d.Indexer == nil:
			return fmt.Errorf("%w: derived store %q has no indexer", ErrConfig, d.Name)
		case names[d.Name]:
			return fmt.Errorf("%w: store name %q used twice", ErrConfig, d.Name)
		}
		names[d.Name] = true
	}
	if c.BatchSize < 0 {
		return fmt.Errorf("%w: batch_size must be >= 0, got %d", ErrConfig, c.BatchSize)
	}
	if c.MaxRepairQueue < 0 {
		return fmt.Errorf("%w: max_repair_queue must be >= 0, got %d", ErrConfig, c.MaxRepairQueue)
	}
	if c.Dimension < 0 {
		return fmt.Errorf("%w: dimension must be >= 0, got %d", ErrConfig, c.Dimension)
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

// Result is the outcome for one input document, in input order.
type Result struct {
	ID string `json:"id"`
	// Status is "ok", "partial" or "failed".
	Status string `json:"status"`
	// Code is one of the Code* constants when Status is not "ok".
	Code string `json:"code,omitempty"`
	// Error says what went wrong, without document content.
	Error string `json:"error,omitempty"`
	// Stores maps each store the document reached to "ok", "failed" or
	// "skipped"; nil when the document failed before any write.
	Stores map[string]string `json:"stores,omitempty"`
}

// Pipeline is the write path shared by POST /v1/documents, `ragd ingest`
// and `ragd eval`: validate, embed, extract entities, write the record
// store, then the derived stores. It is safe for concurrent use.
type Pipeline struct {
	record    NamedIndexer
	derived   []NamedIndexer
	embedder  spi.Embedder
	extractor EntityExtractor
	embedText func(spi.Document) string
	dim       int
	batch     int
	limits    Limits
	maxQueue  int
	log       *slog.Logger
	now       func() time.Time
	tracer    trace.Tracer

	// storeMu serialises writes to each derived store so that a repair
	// never overwrites a newer version written by Upsert in the meantime.
	storeMu map[string]*sync.Mutex
	// qmu guards queue, dropped and seq.
	qmu     sync.Mutex
	queue   map[string]map[string]repairOp
	dropped map[string]int
	seq     uint64
}

// New validates cfg and returns a Pipeline.
func New(cfg Config) (*Pipeline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Pipeline{
		embedder:  cfg.Embedder,
		extractor: cfg.Extractor,
		embedText: cfg.EmbedText,
		dim:       cfg.Dimension,
		batch:     cmp.Or(cfg.BatchSize, DefaultBatchSize),
		limits:    cfg.Limits.WithDefaults(),
		maxQueue:  cmp.Or(cfg.MaxRepairQueue, DefaultMaxRepairQueue),
		log:       cfg.Logger,
		now:       cfg.Now,
		tracer:    newTracer(cfg.TracerProvider),
		storeMu:   map[string]*sync.Mutex{},
		queue:     map[string]map[string]repairOp{},
		dropped:   map[string]int{},
	}
	if p.dim == 0 && p.embedder != nil {
		p.dim = p.embedder.Dimension()
	}
	if p.embedText == nil {
		p.embedText = DefaultEmbedText
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	derived := cfg.Derived
	if cfg.Record != nil {
		p.record = NamedIndexer{Name: cmp.Or(cfg.RecordName, DefaultRecordName), Indexer: cfg.Record}
	} else {
		p.record, derived = derived[0], derived[1:]
	}
	p.derived = slices.Clone(derived)
	for _, d := range p.derived {
		p.storeMu[d.Name] = &sync.Mutex{}
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

// RecordName is the name of the store acting as the system of record.
func (p *Pipeline) RecordName() string { return p.record.Name }

// Dimension is the vector length documents are checked against (0 when
// there is neither an embedder nor a configured dimension).
func (p *Pipeline) Dimension() int { return p.dim }

// Upsert writes docs and returns one Result per input document, in order.
//
// Each document is validated on its own; an invalid one fails with a
// Code* code while the others proceed. Documents without a vector are
// embedded in batches (an embedder failure fails those documents with
// embedder_unavailable; nothing is written for them). Documents without
// entities get them from the Extractor, when configured. The record store
// is written first: a document it does not accept fails. Accepted documents
// are then written to every derived store; a derived failure makes the
// result "partial", names the store in Stores, and queues the document for
// Repair. Input documents are not modified.
func (p *Pipeline) Upsert(ctx context.Context, docs []spi.Document) []Result {
	res := make([]Result, len(docs))
	work := make([]spi.Document, len(docs))
	copy(work, docs)
	var valid []int
	seen := make(map[string]int, len(docs))
	for i := range work {
		res[i].ID = work[i].ID
		if e := validate(&work[i], p.limits, p.dim); e != nil {
			p.fail(&res[i], e.code, e.msg)
			continue
		}
		if first, dup := seen[work[i].ID]; dup {
			p.fail(&res[i], CodeDuplicateID, fmt.Sprintf("id appears earlier in the batch (document %d)", first))
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
	for _, i := range valid {
		if work[i].UpdatedAt.IsZero() {
			work[i].UpdatedAt = now
		}
	}
	rctx, endRecord := p.storeSpan(ctx, spanRecord, p.record.Name, len(valid))
	accepted := p.writeRecord(rctx, work, res, valid)
	endRecord(len(valid) - len(accepted))
	p.writeDerived(ctx, work, res, accepted)
	return res
}

func (p *Pipeline) fail(r *Result, code, msg string) {
	r.Status, r.Code, r.Error = StatusFailed, code, msg
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
	for chunk := range slices.Chunk(need, p.batch) {
		p.embedChunk(ctx, work, res, chunk)
	}
	return slices.DeleteFunc(valid, func(i int) bool { return res[i].Status == StatusFailed })
}

func (p *Pipeline) embedChunk(ctx context.Context, work []spi.Document, res []Result, chunk []int) {
	texts := make([]string, len(chunk))
	for k, i := range chunk {
		texts[k] = p.embedText(work[i])
	}
	vecs, err := p.embedder.Embed(ctx, texts)
	if err == nil && len(vecs) != len(texts) {
		err = fmt.Errorf("%w: embedder returned %d vectors for %d texts", spi.ErrUnavailable, len(vecs), len(texts))
	}
	if err == nil {
		for k := range vecs {
			if verr := spi.ValidateVector(vecs[k], p.dim); verr != nil {
				err = fmt.Errorf("%w: embedder output: %v", spi.ErrUnavailable, verr)
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
		code := CodeEmbedderUnavailable
		switch {
		case ctx.Err() != nil:
			code = CodeCanceled
		case errors.Is(err, spi.ErrInvalidQuery):
			code = CodeEmbedderRejected
		}
		p.log.Warn("ingest: embed failed", "docs", len(chunk), "first_id", work[chunk[0]].ID, "err", err)
		for _, i := range chunk {
			p.fail(&res[i], code, safeError(ctx, "embedder", err))
		}
		return
	}
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
			p.log.Warn("ingest: entity extraction failed; storing without entities", "id", work[i].ID, "err", err)
			continue
		}
		if len(ents) > p.limits.MaxEntities {
			ents = ents[:p.limits.MaxEntities]
		}
		work[i].Entities = ents
	}
}

// writeRecord writes valid documents to the record store and returns the
// indices it accepted.
func (p *Pipeline) writeRecord(ctx context.Context, work []spi.Document, res []Result, valid []int) []int {
	var accepted []int
	for chunk := range slices.Chunk(valid, p.batch) {
		batch := make([]spi.Document, len(chunk))
		for k, i := range chunk {
			batch[k] = work[i]
		}
		failed := failures(p.record.Indexer.Upsert(ctx, batch), batch)
		for _, i := range chunk {
			res[i].Stores = map[string]string{p.record.Name: StoreOK}
			for _, d := range p.derived {
				res[i].Stores[d.Name] = StoreSkipped
			}
			if err, bad := failed[work[i].ID]; bad {
				res[i].Stores[p.record.Name] = StoreFailed
				p.fail(&res[i], recordCode(ctx, err), safeError(ctx, p.record.Name, err))
				continue
			}
			res[i].Status = StatusOK
			accepted = append(accepted, i)
		}
		if len(failed) > 0 {
			p.log.Warn("ingest: record store write failed", "store", p.record.Name, "failed", len(failed), "batch", len(batch), "err", firstErr(failed, batch))
		}
	}
	return accepted
}

// writeDerived writes accepted documents to every derived store
// concurrently, one result slot per store.
func (p *Pipeline) writeDerived(ctx context.Context, work []spi.Document, res []Result, accepted []int) {
	if len(accepted) == 0 || len(p.derived) == 0 {
		return
	}
	docs := make([]spi.Document, len(accepted))
	for k, i := range accepted {
		docs[k] = work[i]
	}
	failed := make([]map[string]error, len(p.derived))
	var wg sync.WaitGroup
	for s, d := range p.derived {
		wg.Go(func() {
			sctx, end := p.storeSpan(ctx, spanApply, d.Name, len(docs))
			failed[s] = p.upsertDerived(sctx, d, docs)
			end(len(failed[s]))
		})
	}
	wg.Wait()
	for _, i := range accepted {
		p.markDerived(&res[i], failed, work[i].ID)
	}
}

// markDerived records in r how each derived store fared with id (failed[s]
// holds store s's failed ids); a failure makes r partial.
func (p *Pipeline) markDerived(r *Result, failed []map[string]error, id string) {
	var msgs []string
	for s, d := range p.derived {
		if err, bad := failed[s][id]; bad {
			r.Stores[d.Name] = StoreFailed
			msgs = append(msgs, safeError(context.Background(), d.Name, err))
		} else {
			r.Stores[d.Name] = StoreOK
		}
	}
	if len(msgs) > 0 {
		r.Status, r.Code = StatusPartial, CodeDerivedStoreFailed
		r.Error = strings.Join(msgs, "; ") + " (queued for repair)"
	}
}

// upsertDerived writes docs to one derived store under its lock, updates
// the repair queue, and returns the failed ids.
func (p *Pipeline) upsertDerived(ctx context.Context, d NamedIndexer, docs []spi.Document) map[string]error {
	mu := p.storeMu[d.Name]
	mu.Lock()
	defer mu.Unlock()
	all := map[string]error{}
	for batch := range slices.Chunk(docs, p.batch) {
		failed := failures(d.Indexer.Upsert(ctx, batch), batch)
		p.qmu.Lock()
		for k := range batch {
			id := batch[k].ID
			if err, bad := failed[id]; bad {
				all[id] = err
				p.enqueueLocked(d.Name, id, &batch[k])
			} else {
				delete(p.queue[d.Name], id) // the newest version is in: an older repair is moot
			}
		}
		p.qmu.Unlock()
		if len(failed) > 0 {
			p.log.Warn("ingest: derived store write failed; queued for repair", "store", d.Name, "failed", len(failed), "batch", len(batch), "err", firstErr(failed, batch))
		}
	}
	return all
}

// failures maps a store error to the failed documents of batch: nil → none,
// *spi.BatchError → the ones it names, anything else → all.
func failures(err error, batch []spi.Document) map[string]error {
	if err == nil {
		return nil
	}
	out := make(map[string]error, len(batch))
	var be *spi.BatchError
	if errors.As(err, &be) {
		for _, d := range batch {
			if e, ok := be.Failed[d.ID]; ok {
				out[d.ID] = e
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	for _, d := range batch {
		out[d.ID] = err
	}
	return out
}

func firstErr(failed map[string]error, batch []spi.Document) error {
	for _, d := range batch {
		if err, ok := failed[d.ID]; ok {
			return err
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
	case errors.Is(err, spi.ErrInvalidQuery):
		return name + " rejected the document: " + strings.TrimPrefix(err.Error(), name+": ")
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return name + ": canceled before the write finished"
	case errors.Is(err, spi.ErrUnavailable):
		return name + ": unavailable"
	}
	return name + ": write failed (details in the server log)"
}

func recordCode(ctx context.Context, err error) string {
	switch {
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return CodeCanceled
	case errors.Is(err, spi.ErrInvalidQuery):
		return CodeStoreRejected
	case errors.Is(err, spi.ErrUnavailable):
		return CodeStoreUnavailable
	}
	return CodeStoreFailed
}

// Delete removes ids from every store and returns one Result per input id.
// The record store goes first: an id it fails to delete is "failed" and the
// derived stores are not touched (they must not lose a document the record
// still has). A derived failure is "partial" and queues the delete for
// Repair. Unknown ids succeed (spi.Indexer ignores them).
func (p *Pipeline) Delete(ctx context.Context, ids []string) []Result {
	res := make([]Result, len(ids))
	var valid []string
	seen := map[string]bool{}
	for i, id := range ids {
		res[i].ID = id
		if e := checkID("id", id, p.limits.MaxIDBytes); e != nil {
			p.fail(&res[i], e.code, e.msg)
			continue
		}
		if !seen[id] {
			seen[id] = true
			valid = append(valid, id)
		}
	}
	recFailed := map[string]error{}
	var deleted []string
	rctx, endRecord := p.storeSpan(ctx, spanRecord, p.record.Name, len(valid))
	for chunk := range slices.Chunk(valid, p.batch) {
		if err := p.record.Indexer.Delete(rctx, chunk); err != nil {
			for _, id := range chunk {
				recFailed[id] = err
			}
			p.log.Warn("ingest: record store delete failed", "store", p.record.Name, "ids", len(chunk), "err", err)
			continue
		}
		deleted = append(deleted, chunk...)
	}
	endRecord(len(recFailed))
	derFailed := make([]map[string]error, len(p.derived))
	if len(deleted) > 0 {
		var wg sync.WaitGroup
		for s, d := range p.derived {
			wg.Go(func() {
				sctx, end := p.storeSpan(ctx, spanApply, d.Name, len(deleted))
				derFailed[s] = p.deleteDerived(sctx, d, deleted)
				end(len(derFailed[s]))
			})
		}
		wg.Wait()
	}
	for i := range res {
		if res[i].Status == StatusFailed {
			continue
		}
		id := ids[i]
		res[i].Status = StatusOK
		res[i].Stores = map[string]string{p.record.Name: StoreOK}
		if err, bad := recFailed[id]; bad {
			res[i].Stores[p.record.Name] = StoreFailed
			for _, d := range p.derived {
				res[i].Stores[d.Name] = StoreSkipped
			}
			p.fail(&res[i], recordCode(ctx, err), safeError(ctx, p.record.Name, err))
			continue
		}
		p.markDerived(&res[i], derFailed, id)
	}
	return res
}

func (p *Pipeline) deleteDerived(ctx context.Context, d NamedIndexer, ids []string) map[string]error {
	mu := p.storeMu[d.Name]
	mu.Lock()
	defer mu.Unlock()
	all := map[string]error{}
	for chunk := range slices.Chunk(ids, p.batch) {
		err := d.Indexer.Delete(ctx, chunk)
		p.qmu.Lock()
		for _, id := range chunk {
			if err != nil {
				all[id] = err
				p.enqueueLocked(d.Name, id, nil)
			} else {
				delete(p.queue[d.Name], id)
			}
		}
		p.qmu.Unlock()
		if err != nil {
			p.log.Warn("ingest: derived store delete failed; queued for repair", "store", d.Name, "ids", len(chunk), "err", err)
		}
	}
	return all
}
