// Package esapi stands in for go-elasticsearch's esapi with the names that
// Jaeger refers to; see the package elasticsearch of this module.
package esapi

import (
	"fmt"
	"io"
	"net/http"
)

// API is the part of the client's API that Jaeger uses.
type API struct {
	Indices *Indices
}

// Indices is the part of the indices API that Jaeger uses.
type Indices struct {
	PutIndexTemplate func(name string, body io.Reader, o ...func(*IndicesPutIndexTemplateRequest)) (*Response, error)
}

// IndicesPutIndexTemplateRequest is the request PutIndexTemplate's options set.
type IndicesPutIndexTemplateRequest struct{}

// Response is an API response.
type Response struct {
	StatusCode int
	Header     http.Header
	Body       io.ReadCloser
}

// String describes the response.
func (r *Response) String() string {
	return fmt.Sprintf("[%d %s]", r.StatusCode, http.StatusText(r.StatusCode))
}
