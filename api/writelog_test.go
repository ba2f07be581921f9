package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/ingest"
)

// A health request whose log-status query hangs does not hold the others:
// the cache lock is not held while the record is queried, so a caller
// that gives up (its client gone, its deadline passed) answers at once
// without the log, and a caller that waits shares the query in flight
// (issue 18, item 19: api/writelog.go held its lock across the query).
func TestLogStatusQueryHoldsNoLock(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.HealthCacheTTL = -1 })
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	e.writer.StatusFn = func(context.Context) (ingest.LogStatus, error) {
		if calls.Add(1) == 1 {
			close(entered)
			<-release // the first query hangs until the test lets it go
		}
		return ingest.LogStatus{Head: 7, Stores: []ingest.StoreLag{{Store: "keyword", Applied: 7}}}, nil
	}
	first := make(chan *httptest.ResponseRecorder, 1)
	go func() { first <- e.do(http.MethodGet, "/v1/status/health", nil) }()
	<-entered

	// A caller that has given up is not queued behind the hung query.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/status/health", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	second := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		second <- rec
	}()
	select {
	case <-second:
	case <-time.After(30 * time.Second): // a bound for the failure, not a pass condition
		close(release)
		t.Fatal("a health request whose client had gone waited for another's log query")
	}
	close(release)
	h := decodeAs[api.HealthResponse](t, <-first, http.StatusOK)
	if h.Log == nil || h.Log.Head != 7 {
		t.Fatalf("the first caller's log = %+v", h.Log)
	}
}

// The shared query runs on a goroutine of its own, outside the recoverer:
// a Writer whose Status panics leaves the health answer without the log,
// and the process running.
func TestLogStatusPanicIsContained(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.HealthCacheTTL = -1 })
	e.writer.StatusFn = func(context.Context) (ingest.LogStatus, error) { panic("status bug") }
	h := decodeAs[api.HealthResponse](t, e.do(http.MethodGet, "/v1/status/health", nil), http.StatusOK)
	if h.Log != nil {
		t.Fatalf("log %+v after a panic", h.Log)
	}
}
