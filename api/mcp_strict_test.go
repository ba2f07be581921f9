package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/spi"
)

// mcpPost sends one JSON-RPC body to /mcp with the query key, as an MCP
// client does (both Accept types).
func mcpPost(t *testing.T, e *env, body string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	h := append([]string{"Authorization", "Bearer " + queryKey, "Accept", "application/json, text/event-stream"}, headers...)
	return serve(t, e.h, http.MethodPost, api.PathMCP, body, h...)
}

// toolCall is a tools/call body with id 1 and the given arguments.
func toolCall(name, args string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
}

// mcpToolError decodes a JSON-RPC answer that must be a tool error and
// returns its text.
func mcpToolError(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, want 200 with a tool error: %s", rec.Code, rec.Body)
	}
	var resp struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || !resp.Result.IsError || len(resp.Result.Content) != 1 {
		t.Fatalf("not a tool error (%v): %s", err, rec.Body)
	}
	return resp.Result.Content[0].Text
}

// mcpRefusalOf decodes a refusal of /mcp made before MCP read the message:
// the route's HTTP status, and a JSON-RPC error (id null, code -32001)
// whose data is the API's error object and whose message is its
// "code: message (request id …)".
func mcpRefusalOf(t testing.TB, rec *httptest.ResponseRecorder) api.ErrorDetail {
	t.Helper()
	return mcpRefusal(t, rec.Code, rec.Header(), rec.Body.Bytes())
}

// mcpRefusal is mcpRefusalOf for an answer's status, header and body.
func mcpRefusal(t testing.TB, status int, h http.Header, raw []byte) api.ErrorDetail {
	t.Helper()
	var body struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    api.ErrorDetail `json:"data"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("status %d: not a JSON-RPC error: %v: %s", status, err, raw)
	}
	d := body.Error.Data
	if body.JSONRPC != "2.0" || string(body.ID) != "null" || body.Error.Code != -32001 || d.Code == "" || d.Message == "" ||
		body.Error.Message != d.Code+": "+d.Message+" (request id "+d.RequestID+")" {
		t.Fatalf("status %d: JSON-RPC error %s", status, raw)
	}
	if d.RequestID == "" || d.RequestID != h.Get("X-Request-ID") {
		t.Fatalf("request_id %q, X-Request-ID header %q", d.RequestID, h.Get("X-Request-ID"))
	}
	if ct := h.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	return d
}

// wantMCPRefusal asserts a refusal's status and its API code.
func wantMCPRefusal(t testing.TB, rec *httptest.ResponseRecorder, status int, code string) api.ErrorDetail {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d: %s", rec.Code, status, rec.Body)
	}
	d := mcpRefusalOf(t, rec)
	if d.Code != code {
		t.Fatalf("code %q, want %q (message %q)", d.Code, code, d.Message)
	}
	return d
}

// Issue 29 item 3: /mcp takes the query's body limit and its bounds,
// checked before anything is decoded, and the searcher never sees what
// they refuse.
func TestMCPQueryBounds(t *testing.T) {
	const limit = 8 << 10
	e := newEnv(t, func(c *api.Config) { c.Server.QueryBodyLimitBytes = limit })
	// A body over the query limit (the SDK's own bound was 1 MiB).
	big := toolCall("search", `{"text":"a","filter":{"k":["`+strings.Repeat("v", limit)+`"]}}`)
	wantMCPRefusal(t, mcpPost(t, e, big), http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)

	for _, tc := range []struct{ name, args, code string }{
		{"filter keys", strings.TrimSuffix(strings.TrimPrefix(filterOf(spi.MaxFilterConditions+1, 1, 0, 1), `{"text":"a",`), "}"), "invalid_filter"},
		{"filter values", strings.TrimSuffix(strings.TrimPrefix(filterOf(1, spi.MaxFilterValues+1, 0, 1), `{"text":"a",`), "}"), "invalid_filter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := mcpToolError(t, mcpPost(t, e, toolCall("search", `{"text":"a",`+tc.args+`}`)))
			if !strings.HasPrefix(msg, tc.code+": filter.k") || !strings.Contains(msg, "at byte") {
				t.Fatalf("tool error %q, want %s with the byte", msg, tc.code)
			}
		})
	}
	// A body of exactly the limit passes, though the id the SDK sees
	// ("ragd") is longer than the client's (1), and '<' is not escaped
	// on the way.
	pad := limit - len(toolCall("search", `{"text":""}`))
	exact := toolCall("search", `{"text":"`+strings.Repeat("<a", pad/2)+strings.Repeat("w", pad%2)+`"}`)
	if rec := mcpPost(t, e, exact); len(exact) != limit || rec.Code != http.StatusOK {
		t.Fatalf("a body of exactly the limit (%d bytes): %d %.200s", len(exact), rec.Code, rec.Body)
	}
	e.searcher.mu.Lock()
	e.searcher.queries = nil
	e.searcher.mu.Unlock()
	deep := toolCall("search", `{"text":"a","x":`+strings.Repeat("[", 12)+strings.Repeat("]", 12)+`}`)
	wantMCPRefusal(t, mcpPost(t, e, deep), http.StatusBadRequest, api.CodeInvalidBody)
	if n := len(e.searcher.calls()); n != 0 {
		t.Fatalf("%d queries reached the searcher", n)
	}
}

// Issue 29 item 3: a tool's input errors speak the API's language: a
// code, the field, no Go type names, no echo of the query.
func TestMCPToolErrorsArePlain(t *testing.T) {
	e := newEnv(t, nil)
	// The SDK's decoder quoted the bytes after a bad number: with the
	// limit first, the query's first two characters ("Zq...").
	const secret = "Zq-secret-query-text"
	for _, tc := range []struct{ name, tool, args, prefix string }{
		{"huge limit", "search", `{"text":"` + secret + `","limit":1e+300}`, "invalid_limit: limit: "},
		{"limit beyond int64", "search", `{"text":"` + secret + `","limit":99999999999999999999}`, "invalid_limit: limit: "},
		{"limit beyond int64 before the text", "search", `{"limit":99999999999999999999,"text":"` + secret + `"}`, "invalid_limit: limit: "},
		{"oversized limit", "search", `{"text":"` + secret + `","limit":500}`, "invalid_limit: "},
		{"limit of the wrong type", "search", `{"text":"` + secret + `","limit":"5"}`, "invalid_limit: limit: got string, want an integer"},
		{"filter of the wrong type", "search", `{"text":"` + secret + `","filter":{"lang":null}}`, "invalid_filter: filter.lang: "},
		{"filter with an unknown operator", "search", `{"text":"` + secret + `","filter":{"lang":{"$regex":"` + secret + `"}}}`, "invalid_filter: filter.lang.$regex: "},
		{"unknown argument", "search", `{"text":"` + secret + `","limt":5}`, `unknown_field: unknown field "limt"`},
		{"argument in another case", "search", `{"Text":"` + secret + `"}`, `unknown_field: `},
		{"arguments not an object", "search", `["` + secret + `"]`, "invalid_body: "},
		{"missing text", "search", `{}`, "empty_query: "},
		{"id of the wrong type", "get_document", `{"id":7}`, "invalid_id: id: got number, want a string"},
		{"bad id", "get_document", `{"id":"a\u0000b"}`, "invalid_id: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := mcpToolError(t, mcpPost(t, e, toolCall(tc.tool, tc.args)))
			if !strings.HasPrefix(msg, tc.prefix) {
				t.Errorf("tool error %q, want it to begin %q", msg, tc.prefix)
			}
			for _, leak := range []string{secret[:2], "Go struct", "mcpSearchInput", "mcpGetInput", "unmarshal", "1e+300", "validating"} {
				if strings.Contains(msg, leak) {
					t.Errorf("tool error %q shows %q", msg, leak)
				}
			}
		})
	}
	if n := len(e.searcher.calls()); n != 0 {
		t.Fatalf("%d queries reached the searcher", n)
	}
	// The valid call still works and answers structured content.
	rec := mcpPost(t, e, toolCall("search", `{"text":"wing","limit":3,"filter":{"lang":["en"]}}`))
	var ok struct {
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Hits []struct {
					ID string `json:"id"`
				} `json:"hits"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &ok); err != nil || ok.Result.IsError || len(ok.Result.StructuredContent.Hits) != 1 {
		t.Fatalf("valid search: %d %s", rec.Code, rec.Body)
	}
	if q := e.searcher.calls(); len(q) != 1 || q[0].Limit != 3 || !q[0].Filter.Match(spi.Metadata{"lang": spi.String("en")}) || q[0].Filter.Match(spi.Metadata{"lang": spi.String("de")}) {
		t.Fatalf("searcher saw %+v", q)
	}
}

// Issue 29 item 3: the body is read as strictly as /v1/query's: invalid
// UTF-8, an escaped lone surrogate, trailing data, a name twice, a
// compressed body, a batch: each the API's JSON 4xx, never text/plain.
func TestMCPBodyIsStrict(t *testing.T) {
	e := newEnv(t, nil)
	call := toolCall("search", `{"text":"a"}`)
	for _, tc := range []struct {
		name, body string
		headers    []string
		status     int
		code       string
	}{
		{"invalid UTF-8", toolCall("search", "{\"text\":\"a\xff\"}"), nil, http.StatusBadRequest, api.CodeMalformedJSON},
		{"lone surrogate", toolCall("search", `{"text":"a\ud800"}`), nil, http.StatusBadRequest, api.CodeMalformedJSON},
		{"trailing data", call + `{}`, nil, http.StatusBadRequest, api.CodeMalformedJSON},
		{"duplicate envelope name", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, nil, http.StatusBadRequest, api.CodeDuplicateField},
		{"duplicate argument", toolCall("search", `{"text":"a","text":"b"}`), nil, http.StatusBadRequest, api.CodeDuplicateField},
		{"malformed", `{"jsonrpc":"2.0",`, nil, http.StatusBadRequest, api.CodeMalformedJSON},
		{"empty", ``, nil, http.StatusBadRequest, api.CodeMalformedJSON},
		{"batch", `[` + call + `]`, nil, http.StatusBadRequest, api.CodeInvalidBody},
		{"unknown envelope member", `{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}`, nil, http.StatusBadRequest, api.CodeUnknownField},
		{"id of the wrong type", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, nil, http.StatusBadRequest, api.CodeInvalidBody},
		{"wrong jsonrpc version", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, nil, http.StatusBadRequest, api.CodeInvalidBody},
		{"gzip", "\x1f\x8b\x08\x00binary", []string{"Content-Encoding", "gzip"}, http.StatusUnsupportedMediaType, api.CodeUnsupportedEncoding},
		{"not JSON", call, []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType, api.CodeUnsupportedMedia},
		{"no event-stream in Accept", call, []string{"Accept", "application/json"}, http.StatusBadRequest, api.CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := mcpPost(t, e, tc.body, tc.headers...)
			d := wantMCPRefusal(t, rec, tc.status, tc.code)
			if tc.code == api.CodeUnsupportedEncoding && rec.Header().Get("Accept-Encoding") != "identity" {
				t.Errorf("Accept-Encoding %q, want identity", rec.Header().Get("Accept-Encoding"))
			}
			if strings.ContainsRune(d.Message, 0x1f) || strings.ContainsRune(d.Message, '\ufffd') || strings.Contains(d.Message, "binary") {
				t.Errorf("message echoes the body: %q", d.Message)
			}
		})
	}
	if n := len(e.searcher.calls()); n != 0 {
		t.Fatalf("%d queries reached the searcher", n)
	}
}

// Issue 29 item 3: a JSON-RPC id comes back exactly as it was sent; the
// SDK kept int64 or string, so 1e40 came back as -9223372036854775808.
func TestMCPIDRoundTrips(t *testing.T) {
	e := newEnv(t, nil)
	for _, id := range []string{`1e40`, `12345678901234567890123`, `-0`, `1.5`, `7`, `"abc"`, `"\u00e9\ud83d\ude00"`, `""`} {
		for _, method := range []string{"ping", "tools/list"} {
			rec := mcpPost(t, e, `{"jsonrpc":"2.0","id":`+id+`,"method":"`+method+`"}`)
			if rec.Code != http.StatusOK {
				t.Fatalf("id %s %s: %d %s", id, method, rec.Code, rec.Body)
			}
			var resp struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || string(resp.ID) != id {
				t.Errorf("id %s %s: answered id %s (%v)", id, method, resp.ID, err)
			}
		}
	}
	// A tool error answered before the SDK keeps the id too.
	rec := mcpPost(t, e, strings.Replace(toolCall("search", filterOf(spi.MaxFilterConditions+1, 1, 0, 1)), `"id":1`, `"id":1e40`, 1))
	if !bytes.Contains(rec.Body.Bytes(), []byte(`"id":1e40`)) {
		t.Errorf("bounds error: %s", rec.Body)
	}
	// The id after the arguments is found too.
	late := `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"search","arguments":` + filterOf(spi.MaxFilterConditions+1, 1, 0, 1) + `},"id":"late"}`
	if msg := mcpToolError(t, mcpPost(t, e, late)); !strings.HasPrefix(msg, "invalid_filter") {
		t.Errorf("bounds error with the id last: %q", msg)
	}
	if rec := mcpPost(t, e, late); !bytes.Contains(rec.Body.Bytes(), []byte(`"id":"late"`)) {
		t.Errorf("bounds error with the id last: %s", rec.Body)
	}
	// A notification has no answer body.
	rec = mcpPost(t, e, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if rec.Code != http.StatusAccepted || rec.Body.Len() != 0 {
		t.Errorf("notification: %d %q", rec.Code, rec.Body)
	}
}

// Issue 29 item 3: every method but POST is the API's one JSON 405, the
// answer /v1/query (POST only too) gives: status, headers, code, message.
func TestMCPMethodsOneFormat(t *testing.T) {
	e := newEnv(t, nil)
	for _, m := range []string{http.MethodGet, http.MethodDelete, http.MethodPut, http.MethodPatch, http.MethodOptions} {
		rec := serve(t, e.h, m, api.PathMCP, nil, "Authorization", "Bearer "+queryKey, "Accept", "text/event-stream")
		got := wantError(t, rec, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed)
		rest := serve(t, e.h, m, "/v1/query", nil, "Authorization", "Bearer "+queryKey, "Accept", "text/event-stream")
		want := wantError(t, rest, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed)
		if got.RequestID == "" {
			t.Errorf("%s /mcp: no request id", m)
		}
		got.RequestID, want.RequestID = "", ""
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s /mcp answered %+v, /v1/query %+v", m, got, want)
		}
		for _, h := range []string{"Allow", "Content-Type"} {
			if g, w := rec.Header().Get(h), rest.Header().Get(h); g != w || g == "" {
				t.Errorf("%s /mcp: %s %q, /v1/query %q", m, h, g, w)
			}
		}
	}
	// A POST without a key is still 401 first, as a JSON-RPC error (a
	// POST is an MCP client's: TestMCPRefusalIsJSONRPC).
	wantMCPRefusal(t, serve(t, e.h, http.MethodPost, api.PathMCP, `{}`), http.StatusUnauthorized, api.CodeUnauthorized)
}

// An MCP message's params outside a tool call's arguments (_meta,
// initialize's capabilities and clientInfo) are bounded before the SDK
// decodes them into maps: a 176 KB tools/list whose _meta held 17,000
// keys was answered 200 after 19 MB of allocations and 61 ms (a
// tools/call's, 39 MB), where the same keys in a filter are refused in
// 0.5 ms. Refused as the body's fault, 400 invalid_body naming params.
func TestMCPParamsAreBounded(t *testing.T) {
	e := newEnv(t, nil)
	many := func(n int) string {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf(`"k%d":1`, i)
		}
		return "{" + strings.Join(keys, ",") + "}"
	}
	for _, tc := range []struct{ name, body string }{
		{"tools/list _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":` + many(2000) + `}}`},
		{"tools/call _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","_meta":` + many(2000) + `,"arguments":{"text":"a"}}}`},
		{"tools/call other member", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"text":"a"},"zzz":[` + strings.Repeat("1,", 2000) + `1]}}`},
		{"initialize capabilities", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"experimental":` + many(2000) + `},"clientInfo":{"name":"x","version":"1"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := wantMCPRefusal(t, mcpPost(t, e, tc.body), http.StatusBadRequest, api.CodeInvalidBody)
			if d.Field != "params" || d.Offset == nil || !strings.Contains(d.Message, "params holds more than") {
				t.Fatalf("refusal %+v, want params named with the byte", d)
			}
		})
	}
	// What clients send passes: a _meta with a progress token, the
	// initialize of an MCP client, and a tool call's arguments, which the
	// query's bounds cover, whatever their size within them.
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":"t1"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{}},"clientInfo":{"name":"x","title":"X","version":"1"}}}`,
		toolCall("search", `{"text":"`+strings.Repeat("word ", 1000)+`","filter":{"k":[`+strings.Repeat(`"v",`, 1000)+`"v"]}}`),
	} {
		rec := mcpPost(t, e, body)
		var resp struct {
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &resp) != nil || resp.Error != nil || resp.Result == nil {
			t.Errorf("%.80s...: %d %.300s", body, rec.Code, rec.Body)
		}
	}
}

// A request for a method the MCP server does not serve is answered in
// JSON-RPC with the client's id (-32601, method not found), as docs/mcp.md
// says of a message the MCP layer reads. The SDK refused it in plain text
// before MCP 2026-07-28, which /mcp answered as 400 invalid_request with
// a null id, quoting the method back ("JSON RPC not handled:
// \"...\" unsupported").
func TestMCPUnknownMethodIsMethodNotFound(t *testing.T) {
	e := newEnv(t, nil)
	const secret = "Zq-secret/method"
	for _, id := range []string{`7`, `"abc"`, `1e40`} {
		rec := mcpPost(t, e, `{"jsonrpc":"2.0","id":`+id+`,"method":"`+secret+`","params":{}}`)
		var resp struct {
			ID    json.RawMessage `json:"id"`
			Error struct {
				Code    int             `json:"code"`
				Message string          `json:"message"`
				Data    api.ErrorDetail `json:"data"`
			} `json:"error"`
		}
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &resp) != nil {
			t.Fatalf("id %s: %d %s, want 200 with a JSON-RPC error", id, rec.Code, rec.Body)
		}
		if string(resp.ID) != id || resp.Error.Code != -32601 || resp.Error.Data.Code != "method_not_found" || resp.Error.Data.RequestID == "" {
			t.Fatalf("id %s: %s, want -32601 method_not_found with the client's id", id, rec.Body)
		}
		if strings.Contains(rec.Body.String(), "Zq-") || strings.Contains(rec.Body.String(), "JSON RPC") {
			t.Fatalf("the answer quotes the method or the SDK: %s", rec.Body)
		}
	}
	// A notification of an unknown method has no id to answer: it stays
	// the body's 400.
	wantMCPRefusal(t, mcpPost(t, e, `{"jsonrpc":"2.0","method":"`+secret+`"}`), http.StatusBadRequest, api.CodeInvalidRequest)
}

// A tools/call of a tool the server does not have is answered by ragd
// before the SDK, in JSON-RPC with the client's id (-32602, invalid
// params, as MCP says of an unknown tool) and data unknown_tool, without
// the name: the SDK answered `unknown tool "NAME"`, echoing whatever the
// client sent. Every tool tools/list names is still called.
func TestMCPUnknownToolIsNotEchoed(t *testing.T) {
	e := newEnv(t, nil)
	const secret = "Zq-secret\u202etool"
	for _, id := range []string{`7`, `"abc"`, `1e40`} {
		for _, name := range []string{secret, "Search", ""} {
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "tools/call", "params": map[string]any{"name": name, "arguments": map[string]any{}}})
			body = append([]byte(`{"id":`+id+`,`), body[1:]...)
			rec := mcpPost(t, e, string(body))
			var resp struct {
				ID    json.RawMessage `json:"id"`
				Error struct {
					Code int             `json:"code"`
					Data api.ErrorDetail `json:"data"`
				} `json:"error"`
			}
			if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &resp) != nil {
				t.Fatalf("tool %q, id %s: %d %s, want 200 with a JSON-RPC error", name, id, rec.Code, rec.Body)
			}
			if string(resp.ID) != id || resp.Error.Code != -32602 || resp.Error.Data.Code != api.CodeUnknownTool || resp.Error.Data.RequestID == "" {
				t.Fatalf("tool %q, id %s: %s, want -32602 unknown_tool with the client's id", name, id, rec.Body)
			}
			if strings.Contains(rec.Body.String(), "Zq-") || strings.Contains(rec.Body.String(), `"Search"`) || strings.Contains(rec.Body.String(), "unknown tool \\\"") {
				t.Fatalf("the answer quotes the tool name: %s", rec.Body)
			}
		}
	}
	// The tools tools/list names are not unknown.
	var list struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if rec := mcpPost(t, e, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); json.Unmarshal(rec.Body.Bytes(), &list) != nil || len(list.Result.Tools) == 0 {
		t.Fatalf("tools/list: %s", rec.Body)
	}
	for _, tool := range list.Result.Tools {
		rec := mcpPost(t, e, toolCall(tool.Name, `{}`))
		if strings.Contains(rec.Body.String(), api.CodeUnknownTool) {
			t.Errorf("tool %s from tools/list is unknown: %s", tool.Name, rec.Body)
		}
	}
}
