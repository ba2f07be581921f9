package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// PathMCP is the Model Context Protocol endpoint (streamable HTTP).
const PathMCP = "/mcp"

// Bounds of what an MCP tool answers: an agent's context is small, and a
// tool call must cost the server a bounded amount.
const (
	MCPDefaultLimit   = 5
	MCPMaxLimit       = 20
	MCPSnippetRunes   = 300
	MCPTitleRunes     = 200
	MCPDocumentRunes  = 8000
	mcpMaxRequestBody = 1 << 20
)

// mcpSearchInput is the search tool's input.
type mcpSearchInput struct {
	Text   string     `json:"text" jsonschema:"what to search for: a question or keywords"`
	Limit  int        `json:"limit,omitempty" jsonschema:"number of hits, 1 to 20 (default 5)"`
	Filter spi.Filter `json:"filter,omitempty" jsonschema:"metadata filter: every key must have one of its listed values"`
	Tenant string     `json:"tenant,omitempty" jsonschema:"search this tenant's documents (keys bound to a tenant always search their own)"`
}

// mcpHit is one search hit, cut to MCP's bounds.
type mcpHit struct {
	Rank      int     `json:"rank"`
	ID        string  `json:"id"`
	Title     string  `json:"title,omitempty"`
	Snippet   string  `json:"snippet,omitempty"`
	Score     float64 `json:"score"`
	Truncated bool    `json:"truncated,omitempty" jsonschema:"the snippet is the start of a longer text: get_document reads more"`
	// Metadata is the document's metadata, cut to MCPHitMetadataBytes.
	Metadata          map[string]string `json:"metadata,omitempty" jsonschema:"the document's metadata (up to 1 KiB of it: get_document reads all)"`
	MetadataTruncated bool              `json:"metadata_truncated,omitempty" jsonschema:"keys of the metadata were left out: get_document reads all"`
}

// mcpSource is one retrieval source's part in an answer.
type mcpSource struct {
	Status   string  `json:"status" jsonschema:"ok; or why the source was left out: shed, circuit_open, timeout, caller_deadline, error; or disabled (not configured or switched off), skipped (not applicable to this query)"`
	Error    string  `json:"error,omitempty"`
	TookMS   float64 `json:"took_ms"`
	Returned int     `json:"returned"`
}

// mcpSearchOutput is the search tool's answer.
type mcpSearchOutput struct {
	Hits []mcpHit `json:"hits"`
	// Partial: a source did not answer; the hits come from the others.
	Partial  bool                 `json:"partial" jsonschema:"a source was left out: the hits come from the sources that answered"`
	Degraded bool                 `json:"degraded" jsonschema:"a source was left out because it is unhealthy"`
	Sources  map[string]mcpSource `json:"sources"`
}

// mcpGetInput is the get_document tool's input.
type mcpGetInput struct {
	ID string `json:"id" jsonschema:"the document id, as search returned it"`
}

// mcpDocument is the get_document tool's answer.
type mcpDocument struct {
	ID        string            `json:"id"`
	Title     string            `json:"title,omitempty"`
	Text      string            `json:"text,omitempty"`
	Truncated bool              `json:"truncated,omitempty" jsonschema:"text is the start of the document, cut at 8000 characters"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	Tenant    string            `json:"tenant,omitempty"`
}

// mountMCP serves the MCP endpoint. It authenticates like every route
// (query role; a tenant-bound key is scoped to its tenant), takes an
// in-flight slot, and is stateless: every POST is answered on its own, so
// any replica can take any request and the tools run as the request's key.
func (s *Server) mountMCP(e *echo.Echo) {
	cache := mcp.NewSchemaCache()
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		p, _ := r.Context().Value(principalKey{}).(*Principal)
		if p == nil {
			return nil
		}
		return s.mcpServer(p, cache)
	}, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		MaxRequestBodyBytes: mcpMaxRequestBody,
		// ragd's own listener settings decide who may connect; the Host
		// check would refuse a reverse proxy on loopback.
		DisableLocalhostProtection: true,
	})
	handler := func(c echo.Context) error {
		req := c.Request()
		req = req.WithContext(context.WithValue(req.Context(), principalKey{}, principal(c)))
		h.ServeHTTP(c.Response(), req)
		return nil
	}
	mw := []echo.MiddlewareFunc{s.mcpErrors, s.requireAccess(access{role: config.RoleQuery}), s.limitInFlight}
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		e.Add(m, PathMCP, handler, mw...)
	}
	s.paths[PathMCP] = true
}

// principalKey carries the caller's *Principal into the MCP handlers.
type principalKey struct{}

// mcpServer builds the MCP server for one request, its tools bound to the
// caller's principal.
func (s *Server) mcpServer(p *Principal, cache *mcp.SchemaCache) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "ragd", Version: s.cfg.Version}, &mcp.ServerOptions{
		SchemaCache: cache,
		Instructions: "ragd is a hybrid retrieval service. Use search to find documents (hits carry " +
			"ids, titles, snippets, scores and metadata; partial=true means a source was left out and " +
			"sources says which and why), then get_document to read one.",
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "search",
		Description: "Search the document collection (hybrid: semantic, keyword and graph retrieval fused). Returns at most 20 hits with snippets, and each source's status, so a partial answer is visible.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in mcpSearchInput) (*mcp.CallToolResult, mcpSearchOutput, error) {
		out, err := s.mcpSearch(ctx, p, in)
		return nil, out, err
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "get_document",
		Description: "Read one document by id: title, metadata and text (cut at 8000 characters).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in mcpGetInput) (*mcp.CallToolResult, mcpDocument, error) {
		out, err := s.mcpGet(ctx, p, in)
		return nil, out, err
	})
	return srv
}

func (s *Server) mcpSearch(ctx context.Context, p *Principal, in mcpSearchInput) (mcpSearchOutput, error) {
	limit := in.Limit
	switch {
	case limit == 0:
		limit = MCPDefaultLimit
	case limit < 0 || limit > MCPMaxLimit:
		return mcpSearchOutput{}, fmt.Errorf("invalid_limit: limit must be between 1 and %d", MCPMaxLimit)
	}
	if strings.TrimSpace(in.Text) == "" {
		return mcpSearchOutput{}, errors.New("empty_query: text is required")
	}
	q := retriever.Query{Text: in.Text, Limit: limit, Filter: in.Filter, Tenant: in.Tenant}
	if err := p.scopeQuery(&q); err != nil {
		return mcpSearchOutput{}, toolError(err)
	}
	res, err := s.cfg.Searcher.Retrieve(ctx, q)
	if err != nil {
		return mcpSearchOutput{}, toolError(translate(err))
	}
	clampNonFinite(res)
	out := mcpSearchOutput{Hits: make([]mcpHit, 0, len(res.Hits)), Partial: res.Partial, Degraded: res.Degraded,
		Sources: make(map[string]mcpSource, len(res.Sources))}
	for _, h := range res.Hits {
		hit := mcpHit{Rank: h.Rank, ID: h.ID, Score: h.Score}
		if d := h.Document; d != nil {
			hit.Title, _ = cutRunes(d.Title, MCPTitleRunes)
			hit.Snippet, hit.Truncated = cutRunes(strings.Join(strings.Fields(d.Text), " "), MCPSnippetRunes)
			hit.Metadata, hit.MetadataTruncated = cutMetadata(d.Metadata, MCPHitMetadataBytes)
		}
		out.Hits = append(out.Hits, hit)
	}
	for name, st := range res.Sources {
		out.Sources[name] = mcpSource{Status: string(st.Status), Error: st.Error, TookMS: st.TookMS, Returned: st.Returned}
	}
	return out, nil
}

func (s *Server) mcpGet(ctx context.Context, p *Principal, in mcpGetInput) (mcpDocument, error) {
	if err := checkID(in.ID); err != nil {
		return mcpDocument{}, toolError(err)
	}
	d, err := s.visibleDocument(ctx, p, in.ID)
	if err != nil {
		return mcpDocument{}, toolError(translate(err))
	}
	out := mcpDocument{ID: d.ID, Metadata: d.Metadata, Tenant: d.Tenant}
	out.Title, _ = cutRunes(d.Title, MCPTitleRunes)
	out.Text, out.Truncated = cutRunes(d.Text, MCPDocumentRunes)
	return out, nil
}

// toolError is an API error as a tool's error: "code: message", which the
// SDK returns to the agent as a tool result with isError set.
func toolError(err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		return fmt.Errorf("%s: %s", ae.Detail.Code, ae.Detail.Message)
	}
	return err
}

// cutRunes returns s cut to at most n runes, and whether it was cut.
func cutRunes(s string, n int) (string, bool) {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos], true
		}
		i++
	}
	return s, false
}
