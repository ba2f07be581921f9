package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/internal/strictjson"
	"github.com/ragd/ragd/spi"
)

// Per-document codes of the write path, as the API reports them.
const (
	// DocTenantForbidden: the document names a tenant other than the one
	// the API key is bound to.
	DocTenantForbidden = ingest.CodeTenantForbidden
	// DocIDConflict: the id cannot be used (another tenant holds it; the
	// answer does not say which, nor GET tell it exists).
	DocIDConflict = ingest.CodeIDConflict
	// StatusNotFound is the delete status of an id that does not exist.
	StatusNotFound = ingest.StatusNotFound
)

// MaxWait bounds the wait parameter of the write endpoints.
const MaxWait = time.Minute

// writeOptions reads the caller's tenant and the optional wait parameter:
// ?wait=DURATION (Go syntax, e.g. 500ms or 5s; "true" means 10s) makes the
// answer wait until every derived store has applied the writes, at most
// that long and never past the request's deadline.
func writeOptions(c echo.Context) (ingest.WriteOptions, error) {
	opts := ingest.WriteOptions{Tenant: principal(c).Tenant}
	raw := c.QueryParam("wait")
	if raw == "" || raw == "false" {
		return opts, nil
	}
	d, err := time.ParseDuration(raw)
	if raw == "true" {
		d, err = 10*time.Second, nil
	}
	if err != nil || d < 0 || d > MaxWait {
		e := newError(http.StatusBadRequest, CodeInvalidParameter, "wait must be a duration between 0s and %s (e.g. 5s) or true", MaxWait)
		e.Detail.Field = "wait"
		return opts, e
	}
	opts.Wait = d
	return opts, nil
}

// upsertDocuments serves POST /v1/documents. The handler checks the shape
// of the batch and decodes each document on its own (decodeDocument);
// validation, the tenant rule and ownership are the write path's (package
// ingest). Either way a fault of one document is that document's result.
func (s *Server) upsertDocuments() echo.HandlerFunc {
	return func(c echo.Context) error {
		opts, err := writeOptions(c)
		if err != nil {
			return err
		}
		body, ok := c.Get(ctxBody).([]byte)
		if !ok {
			return errors.New("api: upsert without readBody")
		}
		if err := checkBatchSize(body, "documents", s.cfg.Ingest.MaxDocsPerRequest, CodeTooManyDocuments); err != nil {
			return err
		}
		// A document failing on a count is not decoded: what stands in
		// for it keeps its id (for duplicate_id) and fails it alone. The
		// body's text is checked whole first: invalid UTF-8 or a lone
		// surrogate anywhere fails the request, as before.
		if e := strictjson.CheckText(body, "request body"); e != nil {
			return badJSON(e)
		}
		over := findOversized(body, s.docLimits())
		if over != nil {
			body = standIn(body, over)
		}
		all, failed, err := decodeUpsert(body)
		if err != nil {
			return err
		}
		for i, o := range over {
			if o.result != nil && i < len(all) {
				if failed == nil {
					failed = make([]*ingest.Result, len(all))
				}
				failed[i] = o.result
			}
		}
		n := len(all)
		if n == 0 {
			return fieldError(CodeEmptyBatch, "documents", "documents must hold at least one document")
		}
		if max := s.cfg.Ingest.MaxDocsPerRequest; n > max {
			return fieldError(CodeTooManyDocuments, "documents", "%d documents, at most %d per request", n, max)
		}
		results := make([]ingest.Result, n)
		docs := make([]spi.Document, 0, n)
		at := make([]int, 0, n) // docs[k] is document at[k] of the batch
		seen := make(map[string]int, n)
		for i, d := range all {
			// A document that failed to decode has no id; one that
			// failed on a count keeps it, and still may not repeat one.
			if d.ID != "" {
				if j, ok := seen[d.ID]; ok {
					return fieldError(CodeDuplicateID, fmt.Sprintf("documents[%d].id", i),
						"documents[%d].id repeats documents[%d].id", i, j)
				}
				seen[d.ID] = i
			}
			if failed != nil && failed[i] != nil {
				results[i] = *failed[i]
				continue
			}
			docs, at = append(docs, d), append(at, i)
		}
		if len(docs) > 0 {
			out := s.cfg.Writer.Upsert(c.Request().Context(), docs, opts)
			if len(out) != len(docs) {
				return fmt.Errorf("api: writer returned %d results for %d documents", len(out), len(docs))
			}
			for k, r := range out {
				results[at[k]] = r
			}
		}
		return s.answerBatch(c, results)
	}
}

// decodeUpsert decodes a POST /v1/documents body: the documents, and for
// each one that does not decode its failed result (failed[i], nil for
// the others; failed is nil when every document decoded). The error is a
// fault of the body itself (decodeBody's 400s): syntax, encoding, a name
// twice, an unknown top-level field, documents not an array.
//
// The whole body is decoded at once first: a batch whose documents all
// decode costs what it did (BenchmarkDecodeBatch500). Only when that
// fails is the body read for its shape and each document decoded on its
// own (decodeDocument), so that a document's fault stays that
// document's.
func decodeUpsert(body []byte) (docs []spi.Document, failed []*ingest.Result, _ error) {
	var req UpsertRequest
	if strictjson.TryDecode(body, &req) {
		return req.Documents, nil, nil
	}
	var raw upsertBody
	if err := decodeBody(body, &raw); err != nil {
		return nil, nil, err
	}
	docs, failed = make([]spi.Document, len(raw.Documents)), make([]*ingest.Result, len(raw.Documents))
	for i, r := range raw.Documents {
		docs[i], failed[i] = decodeDocument(i, r.raw)
	}
	return docs, failed, nil
}

// upsertBody is POST /v1/documents as decodeUpsert reads it when a
// document is at fault: the batch's shape, each document kept as sent, to
// be decoded on its own by decodeDocument.
type upsertBody struct {
	Documents []rawDocument `json:"documents"`
}

// rawDocument is one document of a batch as sent. Decoding the body reads
// it as one value: the body's strict check still finds a name twice
// inside it (and names the place), and its members are judged by
// decodeDocument.
type rawDocument struct{ raw []byte }

// UnmarshalJSON keeps b; encoding/json calls it for null too.
func (d *rawDocument) UnmarshalJSON(b []byte) error {
	d.raw = bytes.Clone(b)
	return nil
}

// Per-document codes of a document that does not decode, beside the write
// path's (package ingest): a member no document has, or a document that is
// not a JSON object.
const (
	DocUnknownField    = "unknown_field"
	DocInvalidDocument = "invalid_document"
)

// decodeDocument decodes document i of a batch by the API's rules
// (strictjson). Anything wrong with one document is that document's
// failure, never the batch's (issue 29 item 6): a wrong JSON type, a value
// out of range, an unknown or miscased member, a document that is not an
// object. Its result carries the code of the member at fault
// (invalid_metadata, invalid_updated_at, invalid_vector, ...) and an error
// naming the member's path. Only faults of the body itself (syntax,
// encoding, a name twice, the batch's shape) fail the whole request, in
// decodeJSON. Typed values, such as typed metadata, decode here and fail
// the same way.
func decodeDocument(i int, raw []byte) (spi.Document, *ingest.Result) {
	var d spi.Document
	e := strictjson.Decode(raw, &d, "document")
	if e == nil {
		return d, nil
	}
	path := fmt.Sprintf("documents[%d]", i)
	if e.Field != "" {
		path += "." + e.Field
	}
	msg := path + ": " + e.Reason
	if e.Reason == "" {
		msg = path + ": " + e.Message
	}
	return spi.Document{}, &ingest.Result{ID: probeID(raw), Status: ingest.StatusFailed, Code: documentCode(e), Error: msg}
}

// documentCode is the per-document code of a decoding error: the write
// path's code for the member at fault.
func documentCode(e *strictjson.Error) string {
	switch {
	case e.Code == strictjson.CodeUnknownField:
		return DocUnknownField
	case e.Field == "":
		return DocInvalidDocument
	}
	switch strictjson.RootField(e.Field) {
	case "id":
		return ingest.CodeInvalidID
	case "tenant":
		return ingest.CodeInvalidTenant
	case "title", "text":
		return ingest.CodeInvalidText
	case "metadata":
		return ingest.CodeInvalidMetadata
	case "vector":
		return ingest.CodeInvalidVector
	case "entities":
		return ingest.CodeInvalidEntities
	case "links":
		return ingest.CodeInvalidLinks
	case "updated_at":
		return ingest.CodeInvalidUpdated
	}
	return DocInvalidDocument
}

// probeID is the id of a document that did not decode, when it has a
// string one, for its result.
func probeID(raw []byte) string {
	var p struct {
		ID any `json:"id"`
	}
	_ = json.Unmarshal(raw, &p) // best effort: the failure is reported anyway
	id, _ := p.ID.(string)
	return id
}

// answerBatch counts the results and answers 200, or 207 when any failed.
// When the request's deadline passed before anything was written, the
// answer is 504 instead.
func (s *Server) answerBatch(c echo.Context, results []ingest.Result) error {
	principal(c).hideVersions(results)
	resp := BatchResponse{Results: results, Total: len(results)}
	for _, r := range results {
		switch r.Status {
		case ingest.StatusOK:
			resp.OK++
			if slices.Contains(slices.Collect(maps.Values(r.Stores)), ingest.StorePending) {
				resp.Pending++
			}
		case StatusNotFound:
			resp.NotFound++
		default:
			resp.Failed++
		}
	}
	if err := c.Request().Context().Err(); err != nil && resp.OK == 0 && resp.Failed > 0 {
		return err
	}
	status := http.StatusOK
	if resp.Failed > 0 {
		status = http.StatusMultiStatus
	}
	return s.writeJSON(c, status, resp)
}

// pathID reads and validates the {id} path parameter, percent-decoded
// exactly once: ids with "/" are addressed as %2F, ids with "%" as %25.
func pathID(c echo.Context) (string, error) {
	id, ok := pathParam(c, "id")
	if !ok {
		return "", fieldError(CodeInvalidID, "id", "the document id is not a valid percent-encoding")
	}
	if err := checkID(id); err != nil {
		return "", err
	}
	return id, nil
}

// checkID validates a document id named by the caller (GET, DELETE, MCP's
// get_document): the stored-name rule, so documents stored before the
// stricter rule for new ids can still be read and deleted.
func checkID(id string) error {
	if err := spi.ValidateStoredName(id, ingest.DefaultMaxIDBytes); err != nil {
		return fieldError(CodeInvalidID, "id", "id: %s", reason(err))
	}
	return nil
}

// reason is the message of a validation error wrapping
// spi.ErrInvalidQuery, without the sentinel's prefix.
func reason(err error) string {
	return strings.TrimPrefix(err.Error(), spi.ErrInvalidQuery.Error()+": ")
}

// visibleDocument loads id from the system of record, treating a document
// of another tenant exactly like a missing one.
func (s *Server) visibleDocument(ctx context.Context, p *Principal, id string) (spi.Document, error) {
	docs, _, err := s.cfg.Documents.Hydrate(ctx, []string{id})
	if err != nil {
		return spi.Document{}, fmt.Errorf("api: documents: hydrate: %w", err)
	}
	for _, d := range docs {
		if d.ID == id && p.visible(d.Tenant) {
			return d, nil
		}
	}
	return spi.Document{}, newError(http.StatusNotFound, CodeNotFound, "no document with this id")
}

// getDocument serves GET /v1/documents/{id}: the stored document, without
// its vector.
func (s *Server) getDocument() echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c)
		if err != nil {
			return err
		}
		d, err := s.visibleDocument(c.Request().Context(), principal(c), id)
		if err != nil {
			return err
		}
		d.Vector = nil
		return s.writeJSON(c, http.StatusOK, d)
	}
}

// deleteDocument serves DELETE /v1/documents/{id}: 404 for an id that does
// not exist or belongs to another tenant (the write path decides, in the
// record's transaction).
func (s *Server) deleteDocument() echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c)
		if err != nil {
			return err
		}
		opts, err := writeOptions(c)
		if err != nil {
			return err
		}
		out := s.cfg.Writer.Delete(c.Request().Context(), []string{id}, opts)
		if len(out) != 1 {
			return fmt.Errorf("api: writer returned %d results for 1 id", len(out))
		}
		r := out[0]
		switch r.Status {
		case ingest.StatusFailed:
			return deleteFailure(c.Request().Context(), r)
		case StatusNotFound:
			return newError(http.StatusNotFound, CodeNotFound, "no document with this id")
		}
		principal(c).hideVersions(out)
		return s.writeJSON(c, http.StatusOK, out[0])
	}
}

// hideVersions clears the versions of results answered to a key bound to a
// tenant. A version is the write's sequence in the change log, which
// every tenant's writes advance: the gap between two of a tenant's writes
// would count the writes of all the others. A per-tenant sequence would
// need a counter per tenant committed with each write; nothing a client
// does needs the version (?wait is the server's, and "unchanged" says a
// retry changed nothing), so tenants get none.
func (p *Principal) hideVersions(results []ingest.Result) {
	if p.Tenant == "" {
		return
	}
	for i := range results {
		results[i].Version = 0
	}
}

// deleteFailure maps a failed single delete to an error answer.
func deleteFailure(ctx context.Context, r ingest.Result) error {
	switch r.Code {
	case ingest.CodeCanceled:
		if err := ctx.Err(); err != nil {
			return err
		}
	case ingest.CodeStoreUnavailable:
		return &apiError{Status: http.StatusServiceUnavailable,
			Detail: ErrorDetail{Code: CodeUnavailable, Message: "the record store is unavailable; retry later"},
			cause:  errors.New(r.Error)}
	}
	return fmt.Errorf("api: delete failed: %s: %s", r.Code, r.Error)
}

// deleteDocuments serves POST /v1/documents/delete, the batch delete.
func (s *Server) deleteDocuments() echo.HandlerFunc {
	return func(c echo.Context) error {
		body, ok := c.Get(ctxBody).([]byte)
		if !ok {
			return errors.New("api: delete without readBody")
		}
		if err := checkBatchSize(body, "ids", s.cfg.Ingest.MaxIDsPerRequest, CodeTooManyIDs); err != nil {
			return err
		}
		var req DeleteRequest
		if err := decodeBody(body, &req); err != nil {
			return err
		}
		ids := req.IDs
		if len(ids) == 0 {
			return fieldError(CodeEmptyBatch, "ids", "ids must hold at least one id")
		}
		if max := s.cfg.Ingest.MaxIDsPerRequest; len(ids) > max {
			return fieldError(CodeTooManyIDs, "ids", "%d ids, at most %d per request", len(ids), max)
		}
		seen := make(map[string]int, len(ids))
		for i, id := range ids {
			if err := spi.ValidateStoredName(id, ingest.DefaultMaxIDBytes); err != nil {
				return fieldError(CodeInvalidID, fmt.Sprintf("ids[%d]", i), "ids[%d]: %s", i, reason(err))
			}
			if j, ok := seen[id]; ok {
				return fieldError(CodeDuplicateID, fmt.Sprintf("ids[%d]", i), "ids[%d] repeats ids[%d]", i, j)
			}
			seen[id] = i
		}
		opts, err := writeOptions(c)
		if err != nil {
			return err
		}
		out := s.cfg.Writer.Delete(c.Request().Context(), ids, opts)
		if len(out) != len(ids) {
			return fmt.Errorf("api: writer returned %d results for %d ids", len(out), len(ids))
		}
		results := out
		return s.answerBatch(c, results)
	}
}
