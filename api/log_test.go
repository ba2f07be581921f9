package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// TestLogsNeverContainQueryTextOrDocumentBodies drives every path that
// logs — successes, bad input, internal errors, panics, auth failures —
// with recognisable query text and document bodies, then checks no log
// line contains them.
func TestLogsNeverContainQueryTextOrDocumentBodies(t *testing.T) {
	const (
		queryText = "zebra-quantum-query-text"
		docText   = "confidential-document-body"
		docTitle  = "confidential-title"
		metaValue = "confidential-metadata"
	)
	e := newEnv(t, nil)
	e.store.docs["stored"] = spi.Document{ID: "stored", Title: docTitle, Text: docText, Metadata: spi.Strings(map[string]string{"m": metaValue})}

	mode := ""
	e.searcher.RetrieveFn = func(_ context.Context, q retriever.Query) (*retriever.Result, error) {
		switch mode {
		case "panic":
			panic("searcher bug while handling " + q.Text)
		case "error":
			return nil, errors.New("retriever: fan-out: unexpected state")
		case "sources":
			return nil, &retriever.NotEnoughSourcesError{Required: 2, Healthy: 0, Sources: map[string]retriever.SourceStatus{"vector": {Status: retriever.StatusError, Error: "connection refused"}}}
		}
		return &retriever.Result{Hits: []retriever.Hit{{ID: "stored", Document: &spi.Document{ID: "stored", Text: docText}}}}, nil
	}
	writerMode := ""
	e.writer.UpsertFn = func(_ context.Context, docs []spi.Document) []ingest.Result {
		if writerMode == "panic" {
			panic(fmt.Sprintf("writer bug on %+v", docs))
		}
		out := make([]ingest.Result, len(docs))
		for i, d := range docs {
			out[i] = ingest.Result{ID: d.ID, Status: ingest.StatusFailed, Code: ingest.CodeStoreRejected, Error: "record store rejected the document"}
		}
		return out
	}

	query := fmt.Sprintf(`{"text":%q}`, queryText)
	docs := fmt.Sprintf(`{"documents":[{"id":"new","title":%q,"text":%q,"metadata":{"m":%q}}]}`, docTitle, docText, metaValue)
	for _, m := range []string{"", "panic", "error", "sources"} {
		mode = m
		e.do(http.MethodPost, "/v1/query", query)
	}
	mode = ""
	e.do(http.MethodPost, "/v1/query", fmt.Sprintf(`{"text":%q,"limit":100000}`, queryText))
	e.do(http.MethodPost, "/v1/query", fmt.Sprintf(`{"text":%q,"bogus":1}`, queryText))
	e.do(http.MethodPost, "/v1/query", fmt.Sprintf(`{"text":%q`, queryText))
	e.do(http.MethodPost, "/v1/query", query, "Authorization", "Bearer wrong-key-123456789")
	e.do(http.MethodPost, "/v1/query", fmt.Sprintf(`{"text":%q,"tenant":"x"}`, queryText), "Authorization", "Bearer "+acmeQueryKey)
	e.do(http.MethodPost, "/v1/documents", docs)
	writerMode = "panic"
	e.do(http.MethodPost, "/v1/documents", docs)
	e.do(http.MethodPost, "/v1/documents", strings.TrimSuffix(docs, "]}"))
	e.do(http.MethodPost, "/v1/documents", docs, "Authorization", "Bearer "+queryKey)
	e.do(http.MethodGet, "/v1/documents/stored", nil)
	e.store.HydrateFn = func(context.Context, []string) ([]spi.Document, []string, error) {
		return nil, nil, fmt.Errorf("vector: hydrate: %w", spi.ErrUnavailable)
	}
	e.do(http.MethodGet, "/v1/documents/stored", nil)

	logs := e.logs.String()
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	if len(lines) < 15 {
		t.Fatalf("only %d log lines:\n%s", len(lines), logs)
	}
	for _, want := range []string{"api: panic recovered", "api: request failed", "api: request rejected", `"status":503`} {
		if !strings.Contains(logs, want) {
			t.Fatalf("logs lack %q, so an error path was not exercised:\n%s", want, logs)
		}
	}
	for _, secret := range []string{queryText, docText, docTitle, metaValue} {
		if strings.Contains(logs, secret) {
			t.Fatalf("logs contain %q:\n%s", secret, logs)
		}
	}
	for _, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		if id, _ := rec["request_id"].(string); id == "" {
			t.Fatalf("log line without request_id: %s", line)
		}
	}
}

// TestInternalErrorsAreLoggedWithRequestID checks the 500 path: the
// answer carries only the request id, the log line carries the cause.
func TestInternalErrorsAreLoggedWithRequestID(t *testing.T) {
	e := newEnv(t, nil)
	e.searcher.RetrieveFn = func(context.Context, retriever.Query) (*retriever.Result, error) {
		return nil, errors.New("retriever: invariant broken: slot 7")
	}
	d := wantError(t, e.do(http.MethodPost, "/v1/query", `{"text":"a"}`), http.StatusInternalServerError, api.CodeInternal)
	if strings.Contains(d.Message, "slot 7") {
		t.Fatalf("cause answered: %q", d.Message)
	}
	found := false
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(line, "api: request failed") && strings.Contains(line, d.RequestID) && strings.Contains(line, "slot 7") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no error log line with request id %s and the cause:\n%s", d.RequestID, e.logs.String())
	}
}
