package api

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/spi"
)

// UpsertRequest is the body of POST /v1/documents.
type UpsertRequest struct {
	Documents []spi.Document `json:"documents"`
}

// DeleteRequest is the body of POST /v1/documents/delete.
type DeleteRequest struct {
	IDs []string `json:"ids"`
}

// BatchResponse answers a batch write or delete: one result per input, in
// input order, and the counts by status. The HTTP status is 200 when no
// result failed and 207 Multi-Status when at least one did.
type BatchResponse struct {
	Results []ingest.Result `json:"results"`
	Total   int             `json:"total"`
	OK      int             `json:"ok"`
	Failed  int             `json:"failed"`
	// NotFound counts delete ids that did not exist (or belong to another
	// tenant); it is not a failure.
	NotFound int `json:"not_found,omitempty"`
	// Pending counts results some derived store has not applied yet (see
	// each result's stores); they are stored and will be.
	Pending int `json:"pending,omitempty"`
}

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

// upsertDocuments serves POST /v1/documents. Validation, the tenant rule
// and ownership are the write path's (package ingest): the handler checks
// the shape of the batch only.
func (s *Server) upsertDocuments() echo.HandlerFunc {
	return func(c echo.Context) error {
		opts, err := writeOptions(c)
		if err != nil {
			return err
		}
		var req UpsertRequest
		if err := s.decodeJSON(c, &req); err != nil {
			return err
		}
		docs := req.Documents
		if len(docs) == 0 {
			return fieldError(CodeEmptyBatch, "documents", "documents must hold at least one document")
		}
		if max := s.cfg.Ingest.MaxDocsPerRequest; len(docs) > max {
			return fieldError(CodeTooManyDocuments, "documents", "%d documents, at most %d per request", len(docs), max)
		}
		seen := make(map[string]int, len(docs))
		for i, d := range docs {
			// Like a timestamp that does not parse, one that no store
			// can keep fails the whole request.
			if spi.ValidateUpdatedAt(d.UpdatedAt) != nil {
				f := fmt.Sprintf("documents[%d].updated_at", i)
				return fieldError("invalid_documents", f, "%s: must lie between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z in UTC", f)
			}
			if d.ID == "" {
				continue
			}
			if j, ok := seen[d.ID]; ok {
				return fieldError(CodeDuplicateID, fmt.Sprintf("documents[%d].id", i),
					"documents[%d].id repeats documents[%d].id", i, j)
			}
			seen[d.ID] = i
		}
		out := s.cfg.Writer.Upsert(c.Request().Context(), docs, opts)
		if len(out) != len(docs) {
			return fmt.Errorf("api: writer returned %d results for %d documents", len(out), len(docs))
		}
		return s.answerBatch(c, out)
	}
}

// answerBatch counts the results and answers 200, or 207 when any failed.
// When the request's deadline passed before anything was written, the
// answer is 504 instead.
func (s *Server) answerBatch(c echo.Context, results []ingest.Result) error {
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
		return s.writeJSON(c, http.StatusOK, r)
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
		var req DeleteRequest
		if err := s.decodeJSON(c, &req); err != nil {
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
