package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"
)

// The MCP endpoint reads its JSON-RPC message as strictly as the REST API
// reads a query, before the SDK sees it:
//
//   - the query's body limit (server.query_body_limit_bytes), Content-Type
//     and identity encoding (readBody), and the query's bounds on a tool
//     call's arguments, walked before anything is decoded
//     (checkMCPBounds);
//   - one JSON-RPC 2.0 message decoded by strictjson (valid UTF-8, no
//     lone surrogate, no name twice, no unknown member, nothing after it);
//     a batch is refused (MCP 2025-06-18 dropped batching);
//   - the id is kept as the client wrote it: the SDK holds an id as an
//     int64 or a string (1e40 came back as -9223372036854775808), so the
//     SDK is given a token and the answer gets the raw id back.
//
// A message refused here, or an answer the SDK writes in plain text, is
// the API's error (status, headers, error object), which mcpErrors writes
// as a JSON-RPC error; a tool's input error is the tool's error result
// (isError), in the API's words (toolError).

// mcpEnvelope is a JSON-RPC 2.0 request or notification.
type mcpEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// mcpIDToken is the id the SDK sees in place of the client's.
const mcpIDToken = `"ragd"`

// errMCPUnknownTool is readMCP's answer to a tools/call request naming a
// tool the server does not have: serveMCP answers it (writeMCPUnknownTool)
// instead of the SDK, which quotes the name back ("unknown tool %q").
var errMCPUnknownTool = errors.New("api: mcp: unknown tool")

// readMCP checks body and returns the message to hand to the SDK (its id
// replaced by mcpIDToken), the client's raw id (nil for a notification),
// and, when the arguments of a tool call pass a bound, the tool error to
// answer instead. A request calling a tool the server does not have is
// errMCPUnknownTool, with the client's id.
func readMCP(body []byte) (forward, id []byte, toolErr error, _ error) {
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		return nil, nil, nil, newError(http.StatusBadRequest, CodeInvalidBody,
			"JSON-RPC batches are not supported (MCP 2025-06-18 removed them): send one message per request")
	}
	peek, err := checkMCPBounds(body)
	if err != nil {
		return nil, nil, nil, err
	}
	if peek.argsErr != nil {
		if peek.method == "tools/call" && peek.id != nil {
			return nil, peek.id, peek.argsErr, nil
		}
		return nil, nil, nil, peek.argsErr
	}
	var env mcpEnvelope
	if err := decodeBody(body, &env); err != nil {
		return nil, nil, nil, err
	}
	if env.JSONRPC != "2.0" {
		return nil, nil, nil, fieldError(CodeInvalidBody, "jsonrpc", `jsonrpc must be "2.0"`)
	}
	if env.Method == "" {
		return nil, nil, nil, fieldError(CodeInvalidBody, "method", "method is required: /mcp takes JSON-RPC requests and notifications")
	}
	if env.ID != nil {
		if c := env.ID[0]; c != '"' && c != '-' && (c < '0' || c > '9') {
			return nil, nil, nil, fieldError(CodeInvalidBody, "id", "id must be a string or a number")
		}
		if name, ok := toolName(env.Params); env.Method == "tools/call" && ok && !mcpToolKnown(name) {
			return nil, env.ID, nil, errMCPUnknownTool
		}
		id, env.ID = env.ID, json.RawMessage(mcpIDToken)
	}
	// Without HTML escaping: '<' would grow six-fold on the way, past the
	// SDK's limit (the limit plus the token's length).
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(env); err != nil {
		return nil, nil, nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), id, nil, nil
}

// toolName is the name a tools/call's params give, ok when it is a
// string; params without one are the SDK's to refuse.
func toolName(params json.RawMessage) (name string, ok bool) {
	var p struct {
		Name json.RawMessage `json:"name"`
	}
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p.Name, &name) != nil {
		return "", false
	}
	return name, true
}

// serveMCP runs the SDK's handler h on the checked message and answers
// with what it wrote, the client's id put back.
func (s *Server) serveMCP(h http.Handler) echo.HandlerFunc {
	return func(c echo.Context) error {
		body, ok := c.Get(ctxBody).([]byte)
		if !ok {
			return errors.New("api: /mcp without readBody")
		}
		forward, id, toolErr, err := readMCP(body)
		if errors.Is(err, errMCPUnknownTool) {
			return writeMCPUnknownTool(c, id)
		}
		if err != nil {
			return err
		}
		if toolErr != nil {
			return writeMCPToolError(c, id, toolErr)
		}
		r := c.Request()
		r = r.WithContext(context.WithValue(r.Context(), principalKey{}, principal(c)))
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(forward)), int64(len(forward))
		rec := &mcpRecorder{header: http.Header{}}
		h.ServeHTTP(rec, r)
		return answerMCP(c, rec, id)
	}
}

// mcpRecorder keeps what the SDK answers (one JSON body: the handler runs
// with JSONResponse and stateless, so it never streams).
type mcpRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *mcpRecorder) Header() http.Header { return r.header }

func (r *mcpRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *mcpRecorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

// Flush is a no-op: the answer is written whole by answerMCP.
func (r *mcpRecorder) Flush() {}

// answerMCP writes the SDK's answer: a JSON answer (a JSON-RPC result or
// error) with the client's id in place of the token, an empty one (a
// notification's 202) as it is, and a plain-text refusal as the API's JSON
// error.
func answerMCP(c echo.Context, rec *mcpRecorder, id []byte) error {
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	ct := rec.header.Get(echo.HeaderContentType)
	if status >= 400 && !strings.HasPrefix(ct, echo.MIMEApplicationJSON) {
		if id != nil && status == http.StatusBadRequest && strings.HasPrefix(rec.body.String(), sdkNotHandled) {
			return writeMCPMethodNotFound(c, id)
		}
		return sdkRefusal(status, rec.body.String())
	}
	for k, v := range rec.header {
		if k != echo.HeaderContentLength {
			c.Response().Header()[k] = v
		}
	}
	if rec.body.Len() == 0 {
		c.Response().WriteHeader(status)
		return nil
	}
	out := rec.body.Bytes()
	if id != nil {
		out = replaceID(out, id)
	}
	return c.Blob(status, ct, out)
}

// replaceID returns the JSON-RPC message msg with its top-level id set to
// id (msg unchanged when it has none).
func replaceID(msg, id []byte) []byte {
	d := jsontext.NewDecoder(bytes.NewReader(msg))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return msg
	}
	for d.PeekKind() == '"' {
		tok, err := d.ReadToken()
		if err != nil {
			return msg
		}
		isID := tok.String() == "id" // the token is valid until the next read only
		v, err := d.ReadValue()
		if err != nil {
			return msg
		}
		if isID {
			end := int(d.InputOffset())
			start := end - len(v)
			return append(append(append([]byte{}, msg[:start]...), id...), msg[end:]...)
		}
	}
	return msg
}

// sdkNotHandled starts the SDK's plain-text refusal of a method it does
// not serve (jsonrpc2.ErrNotHandled), before MCP 2026-07-28; from that
// version on it answers -32601 in JSON-RPC itself.
const sdkNotHandled = "JSON RPC not handled"

// writeMCPMethodNotFound answers a request for a method the MCP server
// does not serve as JSON-RPC wants, with the client's id: -32601, and
// ragd's error object as data. The method is not quoted back.
func writeMCPMethodNotFound(c echo.Context, id []byte) error {
	return writeMCPRPCError(c, id, mcpMethodNotFound, CodeMethodNotFound, "this MCP server does not serve that method (tools/list names its tools)")
}

// writeMCPUnknownTool answers a tools/call of a tool the server does not
// have as MCP wants (a JSON-RPC error, -32602), with the client's id and
// ragd's error object as data. The name is not quoted back.
func writeMCPUnknownTool(c echo.Context, id []byte) error {
	return writeMCPRPCError(c, id, mcpInvalidParams, CodeUnknownTool, "this MCP server has no tool of that name (tools/list names its tools)")
}

// writeMCPRPCError writes a JSON-RPC error answering the request id: code
// rpcCode, ragd's error object (code, message, request id) as data, HTTP
// 200 as JSON-RPC over HTTP answers a message it read.
func writeMCPRPCError(c echo.Context, id []byte, rpcCode int, code, msg string) error {
	var out mcpRPCError
	out.JSONRPC, out.ID = "2.0", json.RawMessage(id)
	out.Error.Code = rpcCode
	out.Error.Data = ErrorDetail{Code: code, Message: msg, RequestID: requestID(c)}
	out.Error.Message = out.Error.Data.Code + ": " + out.Error.Data.Message + " (request id " + out.Error.Data.RequestID + ")"
	c.Set(ctxErrorCode, code)
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}

// JSON-RPC's codes for a method the server does not serve and for
// parameters it refuses (MCP's answer to an unknown tool).
const (
	mcpMethodNotFound = -32601
	mcpInvalidParams  = -32602
)

// sdkRefusal is the API's error for a request the SDK refused in plain
// text (an Accept header without text/event-stream, an unsupported
// MCP-Protocol-Version): its message, cut short and without control
// characters, under a code for its status.
func sdkRefusal(status int, text string) *apiError {
	code := CodeInvalidRequest
	switch status {
	case http.StatusNotFound:
		code = CodeNotFound
	case http.StatusForbidden:
		code = CodeForbidden
	case http.StatusMethodNotAllowed:
		code = CodeMethodNotAllowed
	case http.StatusRequestEntityTooLarge:
		code = CodeBodyTooLarge
	case http.StatusUnsupportedMediaType:
		code = CodeUnsupportedMedia
	}
	if status >= 500 {
		return &apiError{Status: http.StatusInternalServerError, Detail: ErrorDetail{Code: CodeInternal, Message: "internal error"},
			cause: &mcpSDKError{status, text}}
	}
	msg := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, strings.ToValidUTF8(strings.TrimSpace(text), ""))
	if msg == "" {
		msg = http.StatusText(status)
	}
	return newError(status, code, "MCP: %s", truncate(msg, 200))
}

// mcpSDKError is a server error the SDK answered, for the log.
type mcpSDKError struct {
	status int
	text   string
}

func (e *mcpSDKError) Error() string {
	return "api: mcp: the SDK answered " + strconv.Itoa(e.status) + ": " + truncate(e.text, 200)
}

// writeMCPToolError answers a tools/call whose arguments pass a bound with
// the tool's error result, as the tool itself would (toolError's text).
func writeMCPToolError(c echo.Context, id []byte, err error) error {
	type content struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type result struct {
		Content []content `json:"content"`
		IsError bool      `json:"isError"`
	}
	resp := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  result          `json:"result"`
	}{"2.0", id, result{Content: []content{{"text", toolError(err).Error()}}, IsError: true}}
	b, merr := json.Marshal(resp)
	if merr != nil {
		return merr
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}
