package opensearch_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ragd/ragd/backends/keyword/opensearch"
	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/guard"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// Modes of switchable: searches pass to the real node, are rejected as a
// busy cluster rejects them (429 es_rejected_execution_exception), or fail
// as a sick one does (503).
const (
	searchPass int32 = iota
	searchRejected
	searchFailing
)

// switchable is the fault injector between the backend and the real node:
// in a fault mode it answers searches itself, and passes every other
// request.
type switchable struct{ mode atomic.Int32 }

func (s *switchable) RoundTrip(req *http.Request) (*http.Response, error) {
	switch m := s.mode.Load(); {
	case m == searchRejected && strings.HasSuffix(req.URL.Path, "/_search"):
		return rejecting{reject: "/_search"}.RoundTrip(req)
	case m == searchFailing && strings.HasSuffix(req.URL.Path, "/_search"):
		body := `{"error":{"type":"cluster_block_exception","reason":"blocked by: [SERVICE_UNAVAILABLE/2/no master];"},"status":503}`
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
	}
	return http.DefaultTransport.RoundTrip(req)
}

// Behind ragd's guard (breaker and adaptive limit) and retriever, a
// cluster rejecting searches for load (429) sheds the keyword source:
// every query says "shed", and however many there are the breaker counts
// no failure and never opens; the next search the cluster accepts is
// answered at once. The same number of 503 answers does trip it, so the
// guard here is the one that trips on failures.
func TestRejectedExecutionShedsNeverTrips(t *testing.T) {
	url := shared(t)
	ctx := context.Background()
	tr := &switchable{}
	b := open(t, url, opensearch.Config{Transport: tr})
	d := spi.Document{ID: "a", Tenant: "t", Title: "turbine blades", Text: "blade vibration"}
	if err := b.ApplyChanges(ctx, "log", []spi.Change{{Seq: 1, Op: spi.OpUpsert, ID: "a", Doc: &d, Version: 1}}, 1); err != nil {
		t.Fatal(err)
	}

	bcfg := breaker.DefaultConfig()
	br, err := breaker.New(spi.SourceKeyword, bcfg)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := guard.NewAdaptive(guard.AdaptiveConfig{Min: 1, Max: 8, Initial: 4})
	if err != nil {
		t.Fatal(err)
	}
	g := guard.New(spi.SourceKeyword, guard.Config{Circuit: guard.NewCircuit(br, guard.ProbeConfig{}), Limiter: lim})
	r, err := retriever.New(retriever.Config{Keyword: b, Gates: map[string]spi.Gate{spi.SourceKeyword: g}})
	if err != nil {
		t.Fatal(err)
	}
	// keywordStatus runs a keyword-only query and returns the keyword
	// source's status and the hits.
	keywordStatus := func() (retriever.SourceStatus, int) {
		t.Helper()
		res, err := r.Retrieve(ctx, retriever.Query{Text: "turbine", Limit: 5, Tenant: "t", Sources: retriever.Only(spi.SourceKeyword)})
		var ne *retriever.NotEnoughSourcesError
		switch {
		case err == nil:
			return res.Sources[spi.SourceKeyword], len(res.Hits)
		case errors.As(err, &ne):
			return ne.Sources[spi.SourceKeyword], 0
		}
		t.Fatalf("query: %v", err)
		return retriever.SourceStatus{}, 0
	}
	if st, n := keywordStatus(); st.Status != retriever.StatusOK || n != 1 {
		t.Fatalf("before the fault: keyword %+v, %d hits; want ok, 1 hit", st, n)
	}

	tr.mode.Store(searchRejected)
	queries := 4 * bcfg.FailureThreshold
	for i := range queries {
		st, _ := keywordStatus()
		if st.Status != retriever.StatusShed || st.Error != "overloaded (rate limited)" {
			t.Fatalf("rejected query %d: keyword %+v, want shed, overloaded", i+1, st)
		}
		if s := br.Snapshot(); s.State != breaker.Closed || s.FailureCount != 0 {
			t.Fatalf("after %d rejected queries the breaker is %s with %d failures, want closed with none", i+1, s.State, s.FailureCount)
		}
	}
	if s := br.Snapshot(); s.OpenedTotal != 0 {
		t.Fatalf("the breaker opened %d time(s) under 429s", s.OpenedTotal)
	}
	tr.mode.Store(searchPass)
	if st, n := keywordStatus(); st.Status != retriever.StatusOK || n != 1 {
		t.Fatalf("once the cluster accepts searches again: keyword %+v, %d hits; want ok at once, 1 hit", st, n)
	}

	tr.mode.Store(searchFailing)
	for range bcfg.FailureThreshold {
		if st, _ := keywordStatus(); st.Status != retriever.StatusError {
			t.Fatalf("a 503: keyword %+v, want error", st)
		}
	}
	if s := br.Snapshot(); s.State != breaker.Open || s.OpenedTotal != 1 {
		t.Fatalf("after %d 503 answers the breaker is %s (opened %d), want open once", bcfg.FailureThreshold, s.State, s.OpenedTotal)
	}
	if st, _ := keywordStatus(); st.Status != retriever.StatusCircuitOpen {
		t.Fatalf("with the breaker open: keyword %+v, want circuit_open", st)
	}
}
