package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// Listener returns ln for HTTPServer to serve on. Requests that Go's HTTP
// server cannot parse (a request target with a bad percent-escape, a
// malformed header, headers over the size limit, a transfer coding it does
// not implement) or whose Expect header it refuses never reach the
// handler: net/http answers them itself, in plain text or with an empty
// body. On connections from this listener those answers are rewritten
// into the JSON error shape with a fresh request id, so every error a
// client sees has the same form.
func (s *Server) Listener(ln net.Listener) net.Listener { return rejectListener{ln} }

type rejectListener struct{ net.Listener }

func (l rejectListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &rejectConn{Conn: c}, nil
}

// rejectConn rewrites net/http's plain-text rejections as they are written.
type rejectConn struct{ net.Conn }

func (c *rejectConn) Write(p []byte) (int, error) {
	if b, ok := jsonRejection(p); ok {
		if _, err := c.Conn.Write(b); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// CloseWrite keeps net/http's graceful half-close after a rejection.
func (c *rejectConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// plainRejectHeaders is what net/http (server.go, conn.serve) writes after
// the status line of a request it could not read, in one write ending with
// a short plain-text body: the status text again, or for a 501 "Unsupported
// transfer encoding". A handler's response never has this shape: it
// carries a Date header, and net/http sorts Connection before
// Content-Type.
const plainRejectHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// expectationFailed is how net/http's answer to an Expect header other
// than 100-continue begins (response.sendExpectationFailed): a 417 with
// "Connection: close", a Date and "Content-Length: 0", in one write, in
// the request's protocol version. No ragd handler answers 417.
const expectationFailed = " 417 Expectation Failed\r\nConnection: close\r\n"

// jsonRejection returns the JSON form of p when p is one of net/http's
// own rejections.
func jsonRejection(p []byte) ([]byte, bool) {
	if proto, rest, ok := bytes.Cut(p, []byte(expectationFailed)); ok &&
		(string(proto) == "HTTP/1.1" || string(proto) == "HTTP/1.0") &&
		bytes.HasSuffix(rest, []byte("\r\nContent-Length: 0\r\n\r\n")) {
		return rejection(string(proto), "417 Expectation Failed", "expectation_failed",
			"the Expect header asks for an expectation this server does not implement; only 100-continue is supported"), true
	}
	status, body, ok := bytes.Cut(p, []byte(plainRejectHeaders))
	if !ok || !bytes.HasPrefix(status, []byte("HTTP/1.1 ")) || len(body) > 512 || bytes.ContainsAny(body, "\r\n") {
		return nil, false
	}
	// "400 Bad Request" or "400 Bad Request: missing required Host header"
	line := string(status[len("HTTP/1.1 "):])
	codeText, reason, _ := strings.Cut(line, ": ")
	code, err := strconv.Atoi(strings.SplitN(codeText, " ", 2)[0])
	if err != nil || code < 400 || code > 599 {
		return nil, false
	}
	errCode, msg := "malformed_request", "the request could not be parsed"
	switch code {
	case http.StatusRequestHeaderFieldsTooLarge:
		errCode, msg = "headers_too_large", "the request headers are too large"
	case http.StatusNotImplemented:
		errCode, msg = "not_implemented", "the request uses a transfer coding this server does not implement (only chunked is)"
	}
	if reason != "" {
		msg += ": " + reason
	}
	return rejection("HTTP/1.1", codeText, errCode, msg), true
}

// rejection is a complete response with the JSON error body, closing the
// connection.
func rejection(proto, status, code, msg string) []byte {
	id := newRequestID()
	body, _ := json.Marshal(ErrorResponse{Error: ErrorDetail{Code: code, Message: msg, RequestID: id}}) // strings only: cannot fail
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s\r\nConnection: close\r\nContent-Length: %d\r\nContent-Type: application/json\r\n%s: %s\r\n\r\n",
		proto, status, len(body)+1, HeaderRequestID, id)
	b.Write(body)
	b.WriteByte('\n')
	return b.Bytes()
}
