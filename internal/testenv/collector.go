package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/integration"
)

// Environment variables naming a trace collector: where ragd exports spans
// (OTLP/HTTP, e.g. http://127.0.0.1:4318/v1/traces) and the collector's
// query API to find them (Jaeger's, e.g. http://127.0.0.1:16686).
const (
	EnvOTLPEndpoint = "RAG_TEST_OTLP_ENDPOINT"
	EnvJaegerURL    = "RAG_TEST_JAEGER_URL"
	// EnvCollectorWait, a Go duration, is how long Collector waits for a
	// collector that is still starting to answer: CI builds Jaeger (many
	// minutes on a cold cache) while the other tests run, and sets it.
	// Unset, one attempt of at most 30 s.
	EnvCollectorWait = "RAG_TEST_COLLECTOR_WAIT"
)

// CollectorConn is a running trace collector.
type CollectorConn struct {
	OTLPEndpoint string // OTLP/HTTP traces endpoint
	QueryURL     string // Jaeger query API root
}

// Collector returns the trace collector named by RAG_TEST_OTLP_ENDPOINT and
// RAG_TEST_JAEGER_URL (scripts/services.sh starts Jaeger), after checking
// that its query API answers, within RAG_TEST_COLLECTOR_WAIT when that is
// set. Without the variables the test is skipped (failed when
// RAG_REQUIRE_INTEGRATION=1).
func Collector(tb testing.TB) CollectorConn {
	tb.Helper()
	c := CollectorConn{OTLPEndpoint: os.Getenv(EnvOTLPEndpoint), QueryURL: strings.TrimRight(os.Getenv(EnvJaegerURL), "/")}
	if c.OTLPEndpoint == "" || c.QueryURL == "" {
		integration.SkipOrFail(tb, "trace collector", "set "+EnvOTLPEndpoint+" and "+EnvJaegerURL+"; "+servicesHint)
	}
	var wait time.Duration
	if v := os.Getenv(EnvCollectorWait); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			tb.Fatalf("testenv: %s=%q: want a duration such as 20m", EnvCollectorWait, v)
		}
		wait = d
	}
	deadline := time.Now().Add(wait)
	for {
		err := queryAPIAnswers(c.QueryURL)
		if err == nil {
			return c
		}
		if !time.Now().Before(deadline) {
			if wait > 0 {
				tb.Fatalf("testenv: %s=%s: %v (waited %s=%s)", EnvJaegerURL, c.QueryURL, err, EnvCollectorWait, wait)
			}
			tb.Fatalf("testenv: %s=%s: %v", EnvJaegerURL, c.QueryURL, err)
		}
		time.Sleep(time.Second)
	}
}

// queryAPIAnswers: GET /api/services of the collector's query API
// answers 200 within 30 s.
func queryAPIAnswers(queryURL string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, queryURL+"/api/services", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("does not answer: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /api/services: %s", resp.Status)
	}
	return nil
}
