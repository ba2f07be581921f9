package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/client"
	"github.com/ragd/ragd/internal/apptest"
	"github.com/ragd/ragd/spi"
)

// bearer adds a key to every request of the MCP client.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// mcpSession connects the SDK's own client to srv's /mcp with key.
func mcpSession(t *testing.T, srv *apptest.Ragd, key string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "ragd-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{
		Endpoint:             srv.URL + api.PathMCP,
		HTTPClient:           &http.Client{Transport: bearer{key, http.DefaultTransport}},
		DisableStandaloneSSE: true,
	}
	s, err := c.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatalf("mcp connect with key %q: %v", key, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// callTool calls name and decodes its structured answer into out; it
// returns the error text when the tool reported an error.
func callTool(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	if res.IsError {
		var msg []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				msg = append(msg, tc.Text)
			}
		}
		return strings.Join(msg, " ")
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s answered %s: %v", name, b, err)
	}
	return ""
}

type searchOut struct {
	Hits []struct {
		Rank      int     `json:"rank"`
		ID        string  `json:"id"`
		Title     string  `json:"title"`
		Snippet   string  `json:"snippet"`
		Score     float64 `json:"score"`
		Truncated bool    `json:"truncated"`
	} `json:"hits"`
	Partial bool `json:"partial"`
	Sources map[string]struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	} `json:"sources"`
}

type docOut struct {
	ID        string         `json:"id"`
	Title     string         `json:"title"`
	Text      string         `json:"text"`
	Truncated bool           `json:"truncated"`
	Metadata  map[string]any `json:"metadata"`
}

func TestMCP(t *testing.T) {
	srv := apptest.Start(t, apptest.WithAuth)
	ctx := context.Background()
	admin, err := client.New(client.Config{BaseURL: srv.URL, APIKey: apptest.AdminKey})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("transonic flutter of swept wings ", 400) // ~13,000 runes
	docs := []spi.Document{
		{ID: "wing-1", Title: "Wing flutter", Text: long},
		{ID: "heat-1", Title: "Heat transfer", Text: "heat transfer in a laminar boundary layer", Metadata: spi.Metadata{"page": spi.Int(4), "id_hint": spi.String("heat")}},
		{ID: "acme-1", Tenant: apptest.Tenant, Title: "Acme wing", Text: "acme wing flutter report"},
	}
	if res, err := admin.Upsert(ctx, docs, &client.WriteOptions{Wait: 10e9}); err != nil || res.OK != 3 {
		t.Fatalf("Upsert = %+v, %v", res, err)
	}

	// No key, or a wrong one: the HTTP API's own 401, before any MCP.
	resp, err := http.Post(srv.URL+api.PathMCP, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("POST /mcp without a key: %d, want 401", resp.StatusCode)
	}

	s := mcpSession(t, srv, apptest.QueryKey)
	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"get_document", "search"}) {
		t.Fatalf("tools = %v", names)
	}

	var out searchOut
	if msg := callTool(t, s, "search", map[string]any{"text": "wing flutter", "limit": 5}, &out); msg != "" {
		t.Fatalf("search failed: %s", msg)
	}
	if len(out.Hits) == 0 || out.Hits[0].ID != "wing-1" || out.Partial {
		t.Fatalf("search = %+v; want wing-1 first, complete", out)
	}
	h := out.Hits[0]
	if n := utf8.RuneCountInString(h.Snippet); n > api.MCPSnippetRunes || !h.Truncated || h.Title != "Wing flutter" {
		t.Errorf("hit: %d snippet runes (max %d), truncated=%v, title %q", n, api.MCPSnippetRunes, h.Truncated, h.Title)
	}

	var d docOut
	if msg := callTool(t, s, "get_document", map[string]any{"id": "wing-1"}, &d); msg != "" {
		t.Fatalf("get_document failed: %s", msg)
	}
	if n := utf8.RuneCountInString(d.Text); d.ID != "wing-1" || !d.Truncated || n != api.MCPDocumentRunes {
		t.Errorf("get_document: id %q, %d runes, truncated=%v; want wing-1 cut at %d", d.ID, n, d.Truncated, api.MCPDocumentRunes)
	}
	if msg := callTool(t, s, "get_document", map[string]any{"id": "nope"}, &d); !strings.HasPrefix(msg, "not_found") {
		t.Errorf("get_document of a missing id: %q, want not_found", msg)
	}
	if msg := callTool(t, s, "search", map[string]any{"text": "wing", "limit": 500}, &out); !strings.HasPrefix(msg, "invalid_limit") {
		t.Errorf("search with limit 500: %q, want invalid_limit", msg)
	}
	if msg := callTool(t, s, "search", map[string]any{"text": "  "}, &out); !strings.HasPrefix(msg, "empty_query") {
		t.Errorf("search without text: %q, want empty_query", msg)
	}
	// The filter language (issue 30): typed filters select, a bad one is
	// the tool error invalid_filter naming the place.
	if msg := callTool(t, s, "search", map[string]any{"text": "wing flutter heat", "filter": map[string]any{"$or": []any{
		map[string]any{"page": map[string]any{"$gte": 3}}, map[string]any{"id_hint": "heat"}}}}, &out); msg != "" {
		t.Fatalf("search with a typed filter failed: %s", msg)
	}
	if len(out.Hits) != 1 || out.Hits[0].ID != "heat-1" {
		t.Errorf("search with page >= 3 or id_hint=heat = %+v, want heat-1 only", out.Hits)
	}
	if msg := callTool(t, s, "search", map[string]any{"text": "wing", "filter": map[string]any{"page": map[string]any{"$regex": "x"}}}, &out); !strings.HasPrefix(msg, "invalid_filter") || !strings.Contains(msg, "filter.page.$regex") {
		t.Errorf("search with $regex: %q, want invalid_filter naming filter.page.$regex", msg)
	}
	if msg := callTool(t, s, "get_document", map[string]any{"id": "heat-1"}, &d); msg != "" || d.Metadata["page"] != float64(4) {
		t.Errorf("get_document of typed metadata: %q, metadata %v; want page 4", msg, d.Metadata)
	}

	// A source taken out: the agent sees a partial answer and why.
	if _, err := admin.ForceOpen(ctx, "keyword"); err != nil {
		t.Fatal(err)
	}
	out = searchOut{}
	if msg := callTool(t, s, "search", map[string]any{"text": "wing flutter"}, &out); msg != "" {
		t.Fatalf("search with keyword open failed: %s", msg)
	}
	if !out.Partial || out.Sources["keyword"].Status != "circuit_open" || len(out.Hits) == 0 {
		t.Errorf("search with keyword open: partial=%v keyword=%+v hits=%d", out.Partial, out.Sources["keyword"], len(out.Hits))
	}
	if _, err := admin.ForceClose(ctx, "keyword"); err != nil {
		t.Fatal(err)
	}

	// A tenant's key: its tenant's documents only, never another's.
	ts := mcpSession(t, srv, apptest.TenantKey)
	out = searchOut{}
	if msg := callTool(t, ts, "search", map[string]any{"text": "wing flutter"}, &out); msg != "" {
		t.Fatalf("tenant search failed: %s", msg)
	}
	if len(out.Hits) != 1 || out.Hits[0].ID != "acme-1" {
		t.Errorf("tenant search hits = %+v, want acme-1 only", out.Hits)
	}
	if msg := callTool(t, ts, "search", map[string]any{"text": "wing", "tenant": "other"}, &out); !strings.HasPrefix(msg, "tenant_forbidden") {
		t.Errorf("tenant key naming another tenant: %q, want tenant_forbidden", msg)
	}
	if msg := callTool(t, ts, "get_document", map[string]any{"id": "wing-1"}, &d); !strings.HasPrefix(msg, "not_found") {
		t.Errorf("tenant key reading an untenanted document: %q, want not_found", msg)
	}
}
