// Package elasticsearch stands in for github.com/elastic/go-elasticsearch/v9
// in the trace collector that tools/jaeger builds for ragd's tests. Jaeger
// refers to it only for its Elasticsearch 8+ trace storage, which those
// tests never configure (traces stay in memory), while the real module's
// typed API is 847 packages, about a third of the packages of Jaeger's
// build. Here NewClient refuses, so a configuration that asks for that
// storage fails at start, saying why.
package elasticsearch

import (
	"errors"
	"net/http"

	"github.com/elastic/go-elasticsearch/v9/esapi"
)

// Config holds the settings Jaeger sets.
type Config struct {
	Addresses            []string
	Username             string
	Password             string
	DiscoverNodesOnStart bool
	CompressRequestBody  bool
	Header               http.Header
	Transport            http.RoundTripper
}

// Client is never made: NewClient refuses.
type Client struct {
	*esapi.API
}

// ErrLeftOut is NewClient's error.
var ErrLeftOut = errors.New("elasticsearch: Elasticsearch 8+ storage is left out of this build of Jaeger (ragd's tools/jaeger)")

// NewClient refuses: see the package comment.
func NewClient(Config) (*Client, error) { return nil, ErrLeftOut }
