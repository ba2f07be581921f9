package api_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/api"
)

// TestProbesAnswerHEAD is issue 12 item 4: load balancers probe with HEAD.
func TestProbesAnswerHEAD(t *testing.T) {
	e := newEnv(t, nil)
	for _, p := range []string{"/healthz", "/readyz"} {
		rec := serve(t, e.h, http.MethodHead, p, nil)
		if rec.Code != http.StatusOK {
			t.Errorf("HEAD %s: %d %s", p, rec.Code, rec.Body.String())
		}
	}
	// A HEAD to a route without it is a 405, without a body as HEAD
	// answers are.
	rec := serve(t, e.h, http.MethodHead, "/v1/query", nil)
	if rec.Code != http.StatusMethodNotAllowed || rec.Body.Len() != 0 || rec.Header().Get("X-Request-ID") == "" {
		t.Errorf("HEAD /v1/query: %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}
}

// TestOPTIONSIsNotAnOperation: OPTIONS is not part of the API (it is not
// in the OpenAPI document, and ragd serves no CORS): it is a JSON 405 like
// any other unsupported method, not a 204 without auth, and no Allow
// header offers it.
func TestOPTIONSIsNotAnOperation(t *testing.T) {
	e := newEnv(t, nil)
	for _, p := range []string{"/v1/query", "/v1/documents/a", "/healthz"} {
		rec := serve(t, e.h, http.MethodOptions, p, nil)
		wantError(t, rec, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed)
		if allow := rec.Header().Get("Allow"); allow == "" || strings.Contains(allow, "OPTIONS") {
			t.Errorf("OPTIONS %s: Allow %q", p, allow)
		}
	}
	rec := e.do(http.MethodPut, "/v1/query", nil)
	if allow := rec.Header().Get("Allow"); allow != "POST" {
		t.Errorf("PUT /v1/query: Allow %q, want POST", allow)
	}
	wantError(t, serve(t, e.h, http.MethodOptions, "/v1/nope", nil), http.StatusNotFound, api.CodeNotFound)
}

// TestMalformedRequestTargetIsJSON: a request target Go's HTTP server
// cannot parse (a bad percent-escape) is answered in the JSON error shape
// with a request id, not Go's plain-text 400.
func TestMalformedRequestTargetIsJSON(t *testing.T) {
	e := newEnv(t, nil)
	addr := serveTCP(t, e)
	for _, target := range []string{"/v1/documents/%zz", "/v1/documents/%", "/%zz?x=1"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: ragd\r\nAuthorization: Bearer %s\r\n\r\n", target, queryKey)
		resp, err := http.ReadResponse(bufioReader(c), nil)
		if err != nil {
			c.Close()
			t.Fatalf("GET %s: %v", target, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/json" ||
			!strings.Contains(string(body), `"code":"malformed_request"`) || !strings.Contains(string(body), `"request_id":"`+resp.Header.Get("X-Request-ID")+`"`) ||
			resp.Header.Get("X-Request-ID") == "" {
			t.Errorf("GET %s: %d %v %s", target, resp.StatusCode, resp.Header, body)
		}
	}
}

func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }
