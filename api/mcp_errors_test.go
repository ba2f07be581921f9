package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/client"
	"github.com/ragd/ragd/internal/apptest"
	"github.com/ragd/ragd/spi"
)

// A request refused before MCP (no key, a wrong key) is the HTTP 401 of
// every route, with a JSON-RPC error body that carries ragd's message, so
// that MCP clients can show it.
func TestMCPRefusalIsJSONRPC(t *testing.T) {
	srv := apptest.Start(t, apptest.WithAuth)
	for _, key := range []string{"", "wrong-key"} {
		req, err := http.NewRequest(http.MethodPost, srv.URL+api.PathMCP,
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("key %q: %d, WWW-Authenticate %q; want 401 Bearer", key, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		if d := mcpRefusal(t, resp.StatusCode, resp.Header, raw); d.Code != "unauthorized" {
			t.Errorf("key %q: code %q, want unauthorized", key, d.Code)
		}
	}
}

// Search hits carry their document's metadata, bounded; the output schema
// names every status a source can have.
func TestMCPHitMetadataAndStatuses(t *testing.T) {
	srv := apptest.Start(t, apptest.WithAuth)
	ctx := context.Background()
	admin, err := client.New(client.Config{BaseURL: srv.URL, APIKey: apptest.AdminKey})
	if err != nil {
		t.Fatal(err)
	}
	big := map[string]string{"a": "first", "b": strings.Repeat("x", 2000), "c": "after the big one"}
	docs := []spi.Document{
		{ID: "m-1", Title: "Wing flutter", Text: "flutter of swept wings", Metadata: spi.Strings(map[string]string{"dept": "aero", "page": "3"})},
		{ID: "m-2", Title: "Panel flutter", Text: "panel flutter of wings", Metadata: spi.Strings(big)},
	}
	if res, err := admin.Upsert(ctx, docs, &client.WriteOptions{Wait: 10e9}); err != nil || res.OK != 2 {
		t.Fatalf("Upsert = %+v, %v", res, err)
	}
	s := mcpSession(t, srv, apptest.QueryKey)
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"text": "flutter wings"}})
	if err != nil || res.IsError {
		t.Fatalf("search: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Hits []struct {
			ID                string            `json:"id"`
			Metadata          map[string]string `json:"metadata"`
			MetadataTruncated bool              `json:"metadata_truncated"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for i, h := range out.Hits {
		got[h.ID] = i
	}
	i1, ok1 := got["m-1"]
	i2, ok2 := got["m-2"]
	if !ok1 || !ok2 {
		t.Fatalf("hits %s; want m-1 and m-2", b)
	}
	if h := out.Hits[i1]; h.MetadataTruncated || h.Metadata["dept"] != "aero" || h.Metadata["page"] != "3" || len(h.Metadata) != 2 {
		t.Errorf("m-1: %+v; want its whole metadata", h)
	}
	if h := out.Hits[i2]; !h.MetadataTruncated || h.Metadata["a"] != "first" || len(h.Metadata) != 1 {
		t.Errorf("m-2: metadata %v truncated=%v; want a only, truncated", h.Metadata, h.MetadataTruncated)
	}

	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name != "search" {
			continue
		}
		schema, _ := json.Marshal(tl.OutputSchema)
		for _, want := range []string{"disabled", "skipped", "caller_deadline", "circuit_open", `"metadata"`} {
			if !strings.Contains(string(schema), want) {
				t.Errorf("search output schema lacks %s: %s", want, schema)
			}
		}
	}
}
