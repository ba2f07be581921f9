package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/ragd/ragd/client"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/internal/apptest"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// jaegerTrace is the part of Jaeger's /api/traces answer the test reads.
type jaegerTrace struct {
	TraceID string `json:"traceID"`
	Spans   []struct {
		OperationName string `json:"operationName"`
		Tags          []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"tags"`
	} `json:"spans"`
}

func (t jaegerTrace) tag(op, key string) (any, bool) {
	for _, s := range t.Spans {
		if s.OperationName != op {
			continue
		}
		for _, tg := range s.Tags {
			if tg.Key == key {
				return tg.Value, true
			}
		}
	}
	return nil, false
}

// TestTracesReachACollector exports a query's spans over OTLP to a real
// collector (Jaeger) and finds them through its query API: the request's
// span, and one span per source with the source's status in the query —
// ok for vector, circuit_open for keyword, forced open beforehand.
func TestTracesReachACollector(t *testing.T) {
	// Parallel, the only one of the package: it runs after the others, so
	// that when CI is still building Jaeger (testenv.EnvCollectorWait) the
	// wait holds up no other test.
	t.Parallel()
	col := testenv.Collector(t)
	service := fmt.Sprintf("ragd-test-%d", time.Now().UnixNano())
	srv := apptest.Start(t, func(cfg *config.Config) {
		cfg.Tracing.Enabled = true
		cfg.Tracing.Endpoint = col.OTLPEndpoint
		cfg.Tracing.ServiceName = service
		cfg.Tracing.SampleRatio = 1
	})
	ctx := context.Background()
	c, err := client.New(client.Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	docs := []spi.Document{{ID: "w1", Title: "Wing flutter", Text: "flutter of swept wings"}}
	if _, err := c.Upsert(ctx, docs, &client.WriteOptions{Wait: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ForceOpen(ctx, spi.SourceKeyword); err != nil {
		t.Fatal(err)
	}
	res, err := c.Query(ctx, retriever.Query{Text: "wing flutter"})
	if err != nil || res.Sources[spi.SourceKeyword].Status != retriever.StatusCircuitOpen {
		t.Fatalf("query = %+v, %v; want keyword circuit_open", res, err)
	}

	// The batch exporter sends within seconds; poll the collector until
	// the query's trace is there (a deadline, not a timing assertion).
	q := url.Values{"service": {service}, "operation": {"POST /v1/query"}, "limit": {"20"}}
	deadline := time.Now().Add(2 * time.Minute)
	var found *jaegerTrace
	for found == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no trace of POST /v1/query for service %s reached %s in 2 minutes", service, col.QueryURL)
		}
		resp, err := http.Get(col.QueryURL + "/api/traces?" + q.Encode())
		if err == nil {
			var body struct {
				Data []jaegerTrace `json:"data"`
			}
			if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&body) == nil && len(body.Data) > 0 {
				found = &body.Data[0]
			}
			resp.Body.Close()
		}
		if found == nil {
			time.Sleep(500 * time.Millisecond) // polling an external system
		}
	}
	for src, want := range map[string]string{spi.SourceVector: "ok", spi.SourceKeyword: "circuit_open"} {
		got, ok := found.tag("source."+src, "ragd.source.status")
		if !ok || got != want {
			ops := []string{}
			for _, s := range found.Spans {
				ops = append(ops, s.OperationName)
			}
			t.Errorf("span source.%s: ragd.source.status = %v (present %v), want %s; spans: %v", src, got, ok, want, ops)
		}
	}
	if v, ok := found.tag("source."+spi.SourceKeyword, "ragd.breaker.state"); !ok || v != "open" {
		t.Errorf("span source.keyword: ragd.breaker.state = %v, want open", v)
	}
}
