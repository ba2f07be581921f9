package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

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
	Partial int             `json:"partial"`
	Failed  int             `json:"failed"`
	// NotFound counts delete ids that did not exist (or belong to another
	// tenant); it is not a failure.
	NotFound int `json:"not_found,omitempty"`
}

// Per-document codes the API adds to those of package ingest.
const (
	// DocTenantForbidden: the document names a tenant other than the one
	// the API key is bound to.
	DocTenantForbidden = "tenant_forbidden"
	// DocIDConflict: the id belongs to a document of another tenant; a
	// document never moves between tenants by upsert (delete it first).
	DocIDConflict = "id_conflict"
	// StatusNotFound is the delete status of an id that does not exist.
	StatusNotFound = "not_found"
)

func failed(id, code, format string, args ...any) ingest.Result {
	return ingest.Result{ID: id, Status: ingest.StatusFailed, Code: code, Error: fmt.Sprintf(format, args...)}
}

// upsertDocuments serves POST /v1/documents.
func (s *Server) upsertDocuments() echo.HandlerFunc {
	return func(c echo.Context) error {
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
			if d.ID == "" {
				continue
			}
			if j, ok := seen[d.ID]; ok {
				return fieldError(CodeDuplicateID, fmt.Sprintf("documents[%d].id", i),
					"documents[%d].id repeats documents[%d].id", i, j)
			}
			seen[d.ID] = i
		}

		ctx := c.Request().Context()
		p := principal(c)
		results := make([]ingest.Result, len(docs))
		var pending []int
		for i := range docs {
			d := &docs[i]
			if err := ingest.ValidateID(d.ID, ingest.DefaultMaxIDBytes); err != nil {
				results[i] = failed(d.ID, ingest.CodeInvalidID, "id must be 1-%d bytes of valid UTF-8 without control characters", ingest.DefaultMaxIDBytes)
				continue
			}
			if p.Tenant != "" {
				if d.Tenant == "" {
					d.Tenant = p.Tenant
				} else if d.Tenant != p.Tenant {
					results[i] = failed(d.ID, DocTenantForbidden, "this API key is bound to another tenant")
					continue
				}
			}
			if max := s.cfg.Ingest.MaxTextBytes; len(d.Text) > max {
				results[i] = failed(d.ID, ingest.CodeTooLarge, "text is %d bytes, at most %d allowed", len(d.Text), max)
				continue
			}
			pending = append(pending, i)
		}

		// A document id belongs to its tenant: never overwrite another
		// tenant's document. (Check-then-write: two tenants racing to
		// create the same new id are not serialised here.)
		if len(pending) > 0 {
			owners, err := s.owners(ctx, docs, pending)
			if errors.Is(err, spi.ErrUnavailable) {
				// The system of record is down: no document of this batch
				// can be written. Say so per document, as for any other
				// write failure, and write nothing.
				for _, i := range pending {
					results[i] = failed(docs[i].ID, ingest.CodeStoreUnavailable, "the system of record is unavailable; nothing was written, retry later")
				}
				pending = nil
			} else if err != nil {
				return err
			}
			kept := pending[:0]
			for _, i := range pending {
				if t, ok := owners[docs[i].ID]; ok && t != docs[i].Tenant {
					results[i] = failed(docs[i].ID, DocIDConflict, "the id is already used by a document of another tenant")
					continue
				}
				kept = append(kept, i)
			}
			pending = kept
		}

		if len(pending) > 0 {
			batch := make([]spi.Document, len(pending))
			for j, i := range pending {
				batch[j] = docs[i]
			}
			out := s.cfg.Writer.Upsert(ctx, batch)
			if len(out) != len(batch) {
				return fmt.Errorf("api: writer returned %d results for %d documents", len(out), len(batch))
			}
			for j, i := range pending {
				results[i] = out[j]
			}
		}
		return s.answerBatch(c, results)
	}
}

// owners returns the tenant of every id among docs[pending] that the system
// of record already holds.
func (s *Server) owners(ctx context.Context, docs []spi.Document, pending []int) (map[string]string, error) {
	ids := make([]string, len(pending))
	for j, i := range pending {
		ids[j] = docs[i].ID
	}
	return s.ownersOf(ctx, ids)
}

func (s *Server) ownersOf(ctx context.Context, ids []string) (map[string]string, error) {
	found, _, err := s.cfg.Documents.Hydrate(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("api: documents: hydrate: %w", err)
	}
	owners := make(map[string]string, len(found))
	for _, d := range found {
		owners[d.ID] = d.Tenant
	}
	return owners, nil
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
		case ingest.StatusPartial:
			resp.Partial++
		case StatusNotFound:
			resp.NotFound++
		default:
			resp.Failed++
		}
	}
	if err := c.Request().Context().Err(); err != nil && resp.OK+resp.Partial == 0 && resp.Failed > 0 {
		return err
	}
	status := http.StatusOK
	if resp.Failed > 0 {
		status = http.StatusMultiStatus
	}
	return s.writeJSON(c, status, resp)
}

// pathID reads and validates the {id} path parameter (percent-decoded, so
// ids with "/" are addressed as %2F).
func pathID(c echo.Context) (string, error) {
	id, err := url.PathUnescape(c.Param("id"))
	if err == nil {
		err = ingest.ValidateID(id, ingest.DefaultMaxIDBytes)
	}
	if err != nil {
		e := newError(http.StatusBadRequest, CodeInvalidID, "the document id must be 1-%d bytes of valid UTF-8 without control characters", ingest.DefaultMaxIDBytes)
		e.Detail.Field = "id"
		return "", e
	}
	return id, nil
}

// visibleDocument loads id from the system of record, treating a document
// of another tenant exactly like a missing one.
func (s *Server) visibleDocument(c echo.Context, id string) (spi.Document, error) {
	docs, _, err := s.cfg.Documents.Hydrate(c.Request().Context(), []string{id})
	if err != nil {
		return spi.Document{}, fmt.Errorf("api: documents: hydrate: %w", err)
	}
	for _, d := range docs {
		if d.ID == id && principal(c).visible(d.Tenant) {
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
		d, err := s.visibleDocument(c, id)
		if err != nil {
			return err
		}
		d.Vector = nil
		return s.writeJSON(c, http.StatusOK, d)
	}
}

// deleteDocument serves DELETE /v1/documents/{id}.
func (s *Server) deleteDocument() echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c)
		if err != nil {
			return err
		}
		if _, err := s.visibleDocument(c, id); err != nil {
			return err
		}
		out := s.cfg.Writer.Delete(c.Request().Context(), []string{id})
		if len(out) != 1 {
			return fmt.Errorf("api: writer returned %d results for 1 id", len(out))
		}
		r := out[0]
		if r.Status == ingest.StatusFailed {
			return deleteFailure(c.Request().Context(), r)
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
			if err := ingest.ValidateID(id, ingest.DefaultMaxIDBytes); err != nil {
				return fieldError(CodeInvalidID, fmt.Sprintf("ids[%d]", i),
					"ids[%d] must be 1-%d bytes of valid UTF-8 without control characters", i, ingest.DefaultMaxIDBytes)
			}
			if j, ok := seen[id]; ok {
				return fieldError(CodeDuplicateID, fmt.Sprintf("ids[%d]", i), "ids[%d] repeats ids[%d]", i, j)
			}
			seen[id] = i
		}
		ctx := c.Request().Context()
		owners, err := s.ownersOf(ctx, ids)
		results := make([]ingest.Result, len(ids))
		if errors.Is(err, spi.ErrUnavailable) {
			for i, id := range ids {
				results[i] = failed(id, ingest.CodeStoreUnavailable, "the system of record is unavailable; nothing was deleted, retry later")
			}
			return s.answerBatch(c, results)
		} else if err != nil {
			return err
		}
		p := principal(c)
		var pending []int
		for i, id := range ids {
			if t, ok := owners[id]; !ok || !p.visible(t) {
				results[i] = ingest.Result{ID: id, Status: StatusNotFound}
				continue
			}
			pending = append(pending, i)
		}
		if len(pending) > 0 {
			batch := make([]string, len(pending))
			for j, i := range pending {
				batch[j] = ids[i]
			}
			out := s.cfg.Writer.Delete(ctx, batch)
			if len(out) != len(batch) {
				return fmt.Errorf("api: writer returned %d results for %d ids", len(out), len(batch))
			}
			for j, i := range pending {
				results[i] = out[j]
			}
		}
		return s.answerBatch(c, results)
	}
}
