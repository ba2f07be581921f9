package api_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/api"
)

// rawExchange sends req on a new connection to addr and reads one
// response.
func rawExchange(t *testing.T, addr, req string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	r := bufioReader(c)
	resp, err := http.ReadResponse(r, nil)
	for err == nil && resp.StatusCode < 200 { // 100 Continue
		resp, err = http.ReadResponse(r, nil)
	}
	if err != nil {
		t.Fatalf("%q: %v", req, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%q: body: %v", req, err)
	}
	return resp, body
}

// wantJSONError checks the JSON error shape of a raw answer: status, code,
// a message, and a request id equal to the X-Request-ID header.
func wantJSONError(t *testing.T, what string, resp *http.Response, body []byte, status int, code string) {
	t.Helper()
	var e api.ErrorResponse
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &e) != nil ||
		e.Error.Code != code || e.Error.Message == "" || e.Error.RequestID == "" || e.Error.RequestID != resp.Header.Get("X-Request-ID") {
		t.Errorf("%s: %d %v %q; want %d %s in the JSON error shape", what, resp.StatusCode, resp.Header, body, status, code)
	}
}

// Answers net/http gives before any handler runs are in the JSON error
// shape too (issue 18, item 14): a transfer coding it does not implement
// (501, whose body is not the status line), and an expectation other
// than 100-continue (417, with an empty body and a Date header).
func TestServerRejectionsAreJSON(t *testing.T) {
	e := newEnv(t, nil)
	addr := serveTCP(t, e)
	for _, tc := range []struct {
		name, req string
		status    int
		code      string
	}{
		{"Transfer-Encoding: gzip", "POST /v1/query HTTP/1.1\r\nHost: ragd\r\nTransfer-Encoding: gzip\r\nContent-Type: application/json\r\n\r\n", http.StatusNotImplemented, "not_implemented"},
		{"Transfer-Encoding: gzip, chunked", "POST /v1/query HTTP/1.1\r\nHost: ragd\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", http.StatusNotImplemented, "not_implemented"},
		{"Expect: 200-ok", fmt.Sprintf("POST /v1/query HTTP/1.1\r\nHost: ragd\r\nAuthorization: Bearer %s\r\nExpect: 200-ok\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"text\":\"a\"}", queryKey), http.StatusExpectationFailed, "expectation_failed"},
		{"Expect over HTTP/1.0", "GET /healthz HTTP/1.0\r\nExpect: foo\r\n\r\n", http.StatusExpectationFailed, "expectation_failed"},
	} {
		resp, body := rawExchange(t, addr, tc.req)
		wantJSONError(t, tc.name, resp, body, tc.status, tc.code)
	}
	// Expect: 100-continue is served as usual.
	resp, body := rawExchange(t, addr, fmt.Sprintf("POST /v1/query HTTP/1.1\r\nHost: ragd\r\nAuthorization: Bearer %s\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"text\":\"a\"}", queryKey))
	if resp.StatusCode != http.StatusOK {
		t.Errorf("Expect: 100-continue: %d %s", resp.StatusCode, body)
	}
}

// The standard library's handlers mounted under echo (pprof, the console's
// file server) answer errors in the JSON shape too (issue 18, item 14:
// /debug/pprof/nosuch was a plain-text 404).
func TestMountedHandlersErrorsAreJSON(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.Server.Pprof = true })
	for _, path := range []string{"/debug/pprof/nosuch", "/ui/nosuch.js"} {
		wantError(t, e.do(http.MethodGet, path, nil), http.StatusNotFound, api.CodeNotFound)
	}
	wantError(t, e.do(http.MethodGet, "/debug/pprof/heap?seconds=x", nil), http.StatusBadRequest, api.CodeInvalidParameter)
	// What they serve is unchanged.
	// h%65ap is heap: profile names are path parameters, decoded once.
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap?debug=1", "/debug/pprof/h%65ap?debug=1", "/ui/"} {
		if rec := e.do(http.MethodGet, path, nil); rec.Code != http.StatusOK || rec.Body.Len() == 0 {
			t.Errorf("GET %s: %d, %d bytes", path, rec.Code, rec.Body.Len())
		}
	}
}

// A compressed request body is refused with 415 and says so (issue 18,
// item 15: a gzip body with Content-Encoding: gzip was a 400 "not valid
// UTF-8"). ragd does not decompress request bodies: see docs/api.md.
func TestCompressedBodyIs415(t *testing.T) {
	e := newEnv(t, nil)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = io.WriteString(w, `{"documents":[{"id":"a","text":"x"}]}`)
	_ = w.Close()
	for _, enc := range []string{"gzip", "br", "deflate", "GZIP", "identity, gzip"} {
		rec := e.do(http.MethodPost, "/v1/documents", gz.Bytes(), "Content-Encoding", enc)
		d := wantError(t, rec, http.StatusUnsupportedMediaType, api.CodeUnsupportedEncoding)
		if !strings.Contains(d.Message, "Content-Encoding") || rec.Header().Get("Accept-Encoding") != "identity" {
			t.Errorf("Content-Encoding %s: message %q, Accept-Encoding %q", enc, d.Message, rec.Header().Get("Accept-Encoding"))
		}
	}
	if n := len(e.writer.upsertCalls()); n != 0 {
		t.Fatalf("%d writes from compressed bodies", n)
	}
	for _, enc := range []string{"identity", "Identity", ""} {
		rec := e.do(http.MethodPost, "/v1/query", `{"text":"a"}`, "Content-Encoding", enc)
		if rec.Code != http.StatusOK {
			t.Errorf("Content-Encoding %q: %d %s", enc, rec.Code, rec.Body)
		}
	}
}
