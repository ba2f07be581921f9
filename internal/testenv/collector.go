package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// Environment variables naming a trace collector: where ragd exports spans
// (OTLP/HTTP, e.g. http://127.0.0.1:4318/v1/traces) and the collector's
// query API to find them (Jaeger's, e.g. http://127.0.0.1:16686).
const (
	EnvOTLPEndpoint = "RAG_TEST_OTLP_ENDPOINT"
	EnvJaegerURL    = "RAG_TEST_JAEGER_URL"
)

// CollectorConn is a running trace collector.
type CollectorConn struct {
	OTLPEndpoint string // OTLP/HTTP traces endpoint
	QueryURL     string // Jaeger query API root
}

// Collector returns the trace collector named by RAG_TEST_OTLP_ENDPOINT and
// RAG_TEST_JAEGER_URL (scripts/services.sh starts Jaeger), after checking
// that its query API answers. Without the variables the test is skipped
// (failed when RAG_REQUIRE_INTEGRATION=1).
func Collector(tb testing.TB) CollectorConn {
	tb.Helper()
	c := CollectorConn{OTLPEndpoint: os.Getenv(EnvOTLPEndpoint), QueryURL: strings.TrimRight(os.Getenv(EnvJaegerURL), "/")}
	if c.OTLPEndpoint == "" || c.QueryURL == "" {
		skipOrFail(tb, "trace collector", "set "+EnvOTLPEndpoint+" and "+EnvJaegerURL+"; "+servicesHint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.QueryURL+"/api/services", nil)
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("testenv: %s=%s does not answer: %v", EnvJaegerURL, c.QueryURL, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("testenv: %s=%s: GET /api/services: %s", EnvJaegerURL, c.QueryURL, fmt.Sprint(resp.Status))
	}
	return c
}
