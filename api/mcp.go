package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/internal/strictjson"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// PathMCP is the Model Context Protocol endpoint (streamable HTTP).
const PathMCP = "/mcp"

// Bounds of what an MCP tool answers: an agent's context is small, and a
// tool call must cost the server a bounded amount.
const (
	MCPDefaultLimit  = 5
	MCPMaxLimit      = 20
	MCPSnippetRunes  = 300
	MCPTitleRunes    = 200
	MCPDocumentRunes = 8000
)

// mcpSearchInput is the search tool's input.
type mcpSearchInput struct {
	Text   string          `json:"text" jsonschema:"what to search for: a question or keywords"`
	Limit  int             `json:"limit,omitempty" jsonschema:"number of hits, 1 to 20 (default 5)"`
	Filter json.RawMessage `json:"filter,omitempty"` // spi.ParseFilter, so a bad filter is the tool error invalid_filter
	Tenant string          `json:"tenant,omitempty" jsonschema:"search this tenant's documents (keys bound to a tenant always search their own)"`
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
	Metadata          spi.Metadata `json:"metadata,omitempty" jsonschema:"the document's metadata (up to 1 KiB of it: get_document reads all)"`
	MetadataTruncated bool         `json:"metadata_truncated,omitempty" jsonschema:"keys of the metadata were left out: get_document reads all"`
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
	ID        string       `json:"id"`
	Title     string       `json:"title,omitempty"`
	Text      string       `json:"text,omitempty"`
	Truncated bool         `json:"truncated,omitempty" jsonschema:"text is the start of the document, cut at 8000 characters"`
	Metadata  spi.Metadata `json:"metadata,omitempty"`
	Tenant    string       `json:"tenant,omitempty"`
}

// mcpTypeSchemas are the schemas inference cannot see: a filter
// (docs/api.md "Filters") and a metadata value (a string, number,
// boolean, {"$time": "RFC 3339"} or a list of those) are JSON of their
// own, not Go structs.
var mcpTypeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {Type: "object", Description: `metadata filter in the operator form of MongoDB/Chroma: {"lang": "en", "page": {"$gte": 3}, "$or": [{"dept": {"$in": ["a", "b"]}}, {"public": true}]}; operators $eq $ne $in $nin $gt $gte $lt $lte $exists $not $and $or; times as {"$time": "2024-01-01T00:00:00Z"} or, in a range, an RFC 3339 string; {"key": ["a", "b"]} is $in`},
	reflect.TypeFor[spi.Value]():       {Description: `a string, number, boolean, {"$time": "RFC 3339"} or a list of those`},
}

// The MCP tools: mcpServer adds these and no other, and readMCP answers
// a call of any other name itself (mcpToolKnown).
const (
	mcpToolSearch      = "search"
	mcpToolGetDocument = "get_document"
)

// mcpToolKnown reports whether name is one of the MCP tools.
func mcpToolKnown(name string) bool {
	return name == mcpToolSearch || name == mcpToolGetDocument
}

// mcpSchemas are the tools' JSON Schemas, inferred once from their Go
// types as the SDK's typed AddTool would.
var mcpSchemas = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	out := map[string]*jsonschema.Schema{}
	for name, t := range map[string]reflect.Type{
		mcpToolSearch + ".in": reflect.TypeFor[mcpSearchInput](), mcpToolSearch + ".out": reflect.TypeFor[mcpSearchOutput](),
		mcpToolGetDocument + ".in": reflect.TypeFor[mcpGetInput](), mcpToolGetDocument + ".out": reflect.TypeFor[mcpDocument](),
	} {
		sc, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: mcpTypeSchemas})
		if err != nil {
			return nil, fmt.Errorf("api: mcp schema %s: %w", name, err)
		}
		out[name] = sc
	}
	return out, nil
})

// mountMCP serves the MCP endpoint. It authenticates like every route
// (query role; a tenant-bound key is scoped to its tenant), reads the body
// as POST /v1/query does (its limit, Content-Type and encoding rules),
// takes an in-flight slot, and is stateless: every POST is answered on
// its own, so any replica can take any request and the tools run as the
// request's key. POST is its only method: any other is the API's 405.
func (s *Server) mountMCP(e *echo.Echo) error {
	schemas, err := mcpSchemas()
	if err != nil {
		return err
	}
	limit := s.bodyLimit(PathMCP)
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		p, _ := r.Context().Value(principalKey{}).(*Principal)
		if p == nil {
			return nil
		}
		return s.mcpServer(p, schemas)
	}, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		// readBody enforced the limit already; the message the SDK reads
		// may be longer by the id token than the client's id.
		MaxRequestBodyBytes: limit + int64(len(mcpIDToken)),
		// ragd's own listener settings decide who may connect; the Host
		// check would refuse a reverse proxy on loopback.
		DisableLocalhostProtection: true,
	})
	// mcpErrors outermost: every refusal before MCP reads the message
	// (the key, the body, the in-flight limit, readMCP) keeps its HTTP
	// status and headers and gets a JSON-RPC error body carrying ragd's
	// error object.
	e.Add(http.MethodPost, PathMCP, s.serveMCP(h), s.mcpErrors, s.requireAccess(access{role: config.RoleQuery}), s.readBody(limit), s.limitInFlight)
	s.paths[PathMCP] = true
	return nil
}

// principalKey carries the caller's *Principal into the MCP handlers.
type principalKey struct{}

// mcpServer builds the MCP server for one request, its tools bound to the
// caller's principal. The tools decode their own arguments (decodeArgs),
// by the API's rules and in its words; the SDK's typed AddTool would
// answer its schema validator's and encoding/json's messages instead.
func (s *Server) mcpServer(p *Principal, schemas map[string]*jsonschema.Schema) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "ragd", Version: s.cfg.Version}, &mcp.ServerOptions{
		Instructions: "ragd is a hybrid retrieval service. Use search to find documents (hits carry " +
			"ids, titles, snippets, scores and metadata; partial=true means a source was left out and " +
			"sources says which and why), then get_document to read one.",
	})
	srv.AddTool(&mcp.Tool{
		Name:         mcpToolSearch,
		Description:  "Search the document collection (hybrid: semantic, keyword and graph retrieval fused). Returns at most 20 hits with snippets, and each source's status, so a partial answer is visible.",
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
		InputSchema:  schemas[mcpToolSearch+".in"],
		OutputSchema: schemas[mcpToolSearch+".out"],
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in mcpSearchInput
		if err := decodeArgs(req.Params.Arguments, &in); err != nil {
			return toolFailure(err), nil
		}
		out, err := s.mcpSearch(ctx, p, in)
		return toolAnswer(out, err)
	})
	srv.AddTool(&mcp.Tool{
		Name:         mcpToolGetDocument,
		Description:  "Read one document by id: title, metadata and text (cut at 8000 characters).",
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
		InputSchema:  schemas[mcpToolGetDocument+".in"],
		OutputSchema: schemas[mcpToolGetDocument+".out"],
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in mcpGetInput
		if err := decodeArgs(req.Params.Arguments, &in); err != nil {
			return toolFailure(err), nil
		}
		out, err := s.mcpGet(ctx, p, in)
		return toolAnswer(out, err)
	})
	return srv
}

// decodeArgs decodes a tool's arguments into dst by the API's rules
// (strictjson); absent arguments are an empty object.
func decodeArgs(args json.RawMessage, dst any) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if e := strictjson.Decode(args, dst, "arguments"); e != nil {
		return badJSON(e)
	}
	return nil
}

// toolAnswer is a tool's result: out as structured content and, for
// clients that read text only, as its JSON text; or err as the tool's
// error.
func toolAnswer(out any, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		return toolFailure(err), nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("api: mcp: encode the answer: %w", err)
	}
	return &mcp.CallToolResult{StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
}

// toolFailure is err as a tool's error result (toolError's text).
func toolFailure(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(toolError(err))
	return &res
}

func (s *Server) mcpSearch(ctx context.Context, p *Principal, in mcpSearchInput) (mcpSearchOutput, error) {
	limit := in.Limit
	switch {
	case limit == 0:
		limit = MCPDefaultLimit
	case limit < 0 || limit > MCPMaxLimit:
		return mcpSearchOutput{}, fieldError("invalid_limit", "limit", "limit must be between 1 and %d", MCPMaxLimit)
	}
	if strings.TrimSpace(in.Text) == "" {
		return mcpSearchOutput{}, fieldError(CodeEmptyQuery, "text", "text is required")
	}
	var filter spi.Filter
	if len(in.Filter) > 0 {
		f, err := spi.ParseFilter(in.Filter)
		var fe *spi.FilterError
		switch {
		case errors.As(err, &fe):
			return mcpSearchOutput{}, toolError(filterError(fe))
		case err != nil:
			return mcpSearchOutput{}, toolError(newError(http.StatusBadRequest, "invalid_filter", "filter: malformed JSON"))
		}
		filter = f
	}
	q := retriever.Query{Text: in.Text, Limit: limit, Filter: filter, Tenant: in.Tenant}
	if err := p.scopeQuery(&q); err != nil {
		return mcpSearchOutput{}, err
	}
	res, err := s.cfg.Searcher.Retrieve(p.callContext(ctx), q)
	if err != nil {
		return mcpSearchOutput{}, err
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
		return mcpDocument{}, err
	}
	d, err := s.visibleDocument(ctx, p, in.ID)
	if err != nil {
		return mcpDocument{}, err
	}
	out := mcpDocument{ID: d.ID, Metadata: d.Metadata, Tenant: d.Tenant}
	out.Title, _ = cutRunes(d.Title, MCPTitleRunes)
	out.Text, out.Truncated = cutRunes(d.Text, MCPDocumentRunes)
	return out, nil
}

// toolError is err as a tool's error: "code: message" of its API answer
// (translate: the one place errors become answers), which the SDK returns
// to the agent as a tool result with isError set. A server error's cause
// is not shown, as over HTTP.
func toolError(err error) error {
	ae := translate(err)
	return fmt.Errorf("%s: %s", ae.Detail.Code, ae.Detail.Message)
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
