package api_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

func TestQueryAnswersTheRetrieverResult(t *testing.T) {
	e := newEnv(t, nil)
	rec := e.do(http.MethodPost, "/v1/query", `{"text":"boundary layer","limit":3,"filter":{"lang":["en"]},"explain":true}`)
	res := decodeAs[retriever.Result](t, rec, http.StatusOK)
	if len(res.Hits) != 1 || res.Hits[0].ID != "doc-1" || res.Sources[spi.SourceVector].Status != retriever.StatusOK {
		t.Fatalf("result %+v", res)
	}
	calls := e.searcher.calls()
	if len(calls) != 1 {
		t.Fatalf("searcher called %d times", len(calls))
	}
	q := calls[0]
	if q.Text != "boundary layer" || q.Limit != 3 || !q.Explain || !q.Filter.Match(spi.Metadata{"lang": spi.String("en")}) || q.Filter.Match(spi.Metadata{"lang": spi.String("de")}) || q.Tenant != "" {
		t.Fatalf("searcher got %+v", q)
	}
}

func TestQueryAcceptsAVectorAlone(t *testing.T) {
	e := newEnv(t, nil)
	rec := e.do(http.MethodPost, "/v1/query", `{"vector":[0.1,0.2,0.3,0.4]}`)
	decodeAs[retriever.Result](t, rec, http.StatusOK)
	if got := e.searcher.calls(); len(got) != 1 || len(got[0].Vector) != testDimension {
		t.Fatalf("searcher calls %+v", got)
	}
}

// TestQueryBadInput covers every bad-input class of the query endpoint:
// each is a 400 with a specific code, and the searcher is never called.
func TestQueryBadInput(t *testing.T) {
	long := strings.Repeat("x", retriever.DefaultMaxTextBytes+1)
	cases := []struct {
		name, body, code string
		field            string
		offset           bool
	}{
		{"empty body", ``, api.CodeMalformedJSON, "", false},
		{"whitespace body", "  \n ", api.CodeMalformedJSON, "", false},
		{"truncated", `{"text":"a"`, api.CodeMalformedJSON, "", true},
		{"syntax error", `{"text":"a",}`, api.CodeMalformedJSON, "", true},
		{"trailing data", `{"text":"a"} {"text":"b"}`, api.CodeMalformedJSON, "", true},
		{"not an object", `[1,2]`, api.CodeInvalidBody, "", true},
		{"string body", `"text"`, api.CodeInvalidBody, "", true},
		{"unknown field", `{"text":"a","txt":"b"}`, api.CodeUnknownField, "txt", false},
		{"nested unknown field", `{"text":"a","sources":{"vector":{"weigth":1}}}`, api.CodeUnknownField, "sources.vector.weigth", false},
		{"empty query", `{}`, api.CodeEmptyQuery, "text", false},
		{"null body", `null`, api.CodeInvalidBody, "", true},
		{"null body with spaces", " null \n", api.CodeInvalidBody, "", true},
		{"blank text", `{"text":"  \t "}`, api.CodeEmptyQuery, "text", false},
		{"text too long", `{"text":"` + long + `"}`, "invalid_text", "text", false},
		{"vector wrong dimension", `{"vector":[1,2]}`, "invalid_vector", "vector", false},
		{"vector overflow 1e999", `{"vector":[1e999,0,0,0]}`, "invalid_vector", "vector[0]", true},
		{"vector float32 overflow", `{"vector":[0,1e39,0,0]}`, "invalid_vector", "vector[1]", true},
		{"vector NaN string", `{"vector":["NaN",0,0,0]}`, "invalid_vector", "vector[0]", true},
		{"vector not array", `{"vector":1}`, "invalid_vector", "vector", true},
		{"limit above max", `{"text":"a","limit":101}`, "invalid_limit", "limit", false},
		{"negative limit", `{"text":"a","limit":-1}`, "invalid_limit", "limit", false},
		{"limit not integer", `{"text":"a","limit":1.5}`, "invalid_limit", "limit", true},
		{"limit huge", `{"text":"a","limit":1e20}`, "invalid_limit", "limit", true},
		{"limit string", `{"text":"a","limit":"5"}`, "invalid_limit", "limit", true},
		{"weight string", `{"text":"a","sources":{"keyword":{"weight":"x"}}}`, "invalid_sources", "sources.keyword.weight", true},
		{"k object", `{"text":"a","sources":{"graph":{"k":{"n":1}}}}`, "invalid_sources", "sources.graph.k", true},
		{"expand enabled string", `{"text":"a","expand":{"enabled":"yes"}}`, "invalid_expand", "expand.enabled", true},
		{"window above max", `{"text":"a","window":100000}`, "invalid_window", "window", false},
		{"offset above max", `{"text":"a","offset":5000}`, "invalid_offset", "offset", false},
		{"unknown source", `{"text":"a","sources":{"bogus":{}}}`, "invalid_sources", "sources", false},
		{"source k above max", `{"text":"a","sources":{"vector":{"k":100000}}}`, "invalid_sources", "sources.vector.k", false},
		{"negative weight", `{"text":"a","sources":{"keyword":{"weight":-1}}}`, "invalid_sources", "sources.keyword.weight", false},
		{"unknown fusion", `{"text":"a","fusion":{"mode":"magic"}}`, "invalid_fusion", "fusion.mode", false},
		{"hops above 2", `{"text":"a","expand":{"hops":3}}`, "invalid_expand", "expand.hops", false},
		{"min_sources above 3", `{"text":"a","min_sources":4}`, "invalid_min_sources", "min_sources", false},
		{"budget above max", `{"text":"a","budget_ms":99999999}`, "invalid_budget_ms", "budget_ms", false},
		{"filter value null", `{"text":"a","filter":{"lang":null}}`, "invalid_filter", "filter.lang", true},
		{"filter nested list", `{"text":"a","filter":{"lang":[[1]]}}`, "invalid_filter", "filter.lang[0]", true},
		{"filter array", `{"text":"a","filter":["lang"]}`, "invalid_filter", "filter", true},
		{"filter empty values", `{"text":"a","filter":{"lang":[]}}`, "invalid_filter", "filter.lang", true},
		{"filter empty key", `{"text":"a","filter":{"":["x"]}}`, "invalid_filter", "filter", true},
	}
	e := newEnv(t, nil)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := wantError(t, e.do(http.MethodPost, "/v1/query", tc.body), http.StatusBadRequest, tc.code)
			if d.Field != tc.field {
				t.Errorf("field %q, want %q", d.Field, tc.field)
			}
			if tc.offset != (d.Offset != nil) {
				t.Errorf("offset %v, want set=%v", d.Offset, tc.offset)
			}
		})
	}
	if n := len(e.searcher.calls()); n != 0 {
		t.Fatalf("the searcher was called %d times for bad input", n)
	}
}

func TestQueryContentType(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		ct     string
		status int
	}{
		{"application/json", http.StatusOK},
		{"application/json; charset=utf-8", http.StatusOK},
		{"application/problem+json", http.StatusOK},
		{"text/plain", http.StatusUnsupportedMediaType},
		{"application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"application/json; =broken", http.StatusUnsupportedMediaType},
		{"", http.StatusUnsupportedMediaType},
	} {
		t.Run(tc.ct, func(t *testing.T) {
			rec := serve(t, e.h, http.MethodPost, "/v1/query", `{"text":"a"}`,
				"Authorization", "Bearer "+adminKey, "Content-Type", tc.ct)
			if tc.status == http.StatusOK {
				decodeAs[retriever.Result](t, rec, http.StatusOK)
				return
			}
			wantError(t, rec, tc.status, api.CodeUnsupportedMedia)
		})
	}
}

// endless is a body that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

func TestQueryBodyTooLarge(t *testing.T) {
	e := newEnv(t, nil)
	big := `{"text":"` + strings.Repeat("a", testBodyLimit) + `"}`
	// Declared length above the limit: rejected before reading.
	wantError(t, e.do(http.MethodPost, "/v1/query", big), http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)
	// No declared length and a body that never ends: the server stops
	// reading at the limit instead of hanging.
	done := make(chan struct{})
	go func() {
		defer close(done)
		body := io.MultiReader(strings.NewReader(`{"text":"`), endless{})
		wantError(t, e.do(http.MethodPost, "/v1/query", body), http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("an endless body hung the handler")
	}
}

func TestQueryNotEnoughSourcesIs503WithSourceStatuses(t *testing.T) {
	e := newEnv(t, nil)
	e.searcher.RetrieveFn = func(context.Context, retriever.Query) (*retriever.Result, error) {
		return nil, fmt.Errorf("wrapped: %w", &retriever.NotEnoughSourcesError{Required: 2, Healthy: 1, Sources: map[string]retriever.SourceStatus{
			spi.SourceVector:  {Status: retriever.StatusCircuitOpen, RetryInMS: 1500},
			spi.SourceKeyword: {Status: retriever.StatusOK, Returned: 3},
			spi.SourceGraph:   {Status: retriever.StatusTimeout, Error: "deadline"},
		}})
	}
	rec := e.do(http.MethodPost, "/v1/query", `{"text":"a","min_sources":2}`)
	d := wantError(t, rec, http.StatusServiceUnavailable, api.CodeNotEnoughSources)
	if d.Required != 2 || d.Healthy == nil || *d.Healthy != 1 {
		t.Fatalf("required %d healthy %v", d.Required, d.Healthy)
	}
	if got := rec.Header().Get("Retry-After"); got != "2" {
		t.Fatalf("Retry-After %q, want 2 (1500 ms rounded up)", got)
	}
	if d.Sources[spi.SourceVector].Status != retriever.StatusCircuitOpen || d.Sources[spi.SourceVector].RetryInMS != 1500 ||
		d.Sources[spi.SourceGraph].Status != retriever.StatusTimeout || d.Sources[spi.SourceKeyword].Returned != 3 {
		t.Fatalf("sources %+v", d.Sources)
	}
}

// Too few sources because the query's own deadline cut them off is the
// client's timeout (504 timeout, the statuses, no Retry-After), not a 503
// that says the backends are unavailable. Any other source that did not
// answer keeps the 503.
func TestQueryCallerDeadlineIs504(t *testing.T) {
	e := newEnv(t, nil)
	sources := map[string]retriever.SourceStatus{
		spi.SourceVector:  {Status: retriever.StatusCallerDeadline, Error: "the query's own budget of 1ms exhausted"},
		spi.SourceKeyword: {Status: retriever.StatusCallerDeadline, Error: "the query's own budget of 1ms exhausted"},
		spi.SourceGraph:   {Status: retriever.StatusSkipped, Error: retriever.ReasonNothingToSearch},
	}
	e.searcher.RetrieveFn = func(context.Context, retriever.Query) (*retriever.Result, error) {
		return nil, &retriever.NotEnoughSourcesError{Required: 2, Healthy: 1, Sources: sources}
	}
	rec := e.do(http.MethodPost, "/v1/query", `{"text":"a","budget_ms":1,"min_sources":2}`)
	d := wantError(t, rec, http.StatusGatewayTimeout, api.CodeTimeout)
	if d.Required != 2 || d.Healthy == nil || *d.Healthy != 1 || d.Sources[spi.SourceVector].Status != retriever.StatusCallerDeadline {
		t.Fatalf("detail %+v", d)
	}
	if got := rec.Header().Get("Retry-After"); got != "" {
		t.Fatalf("Retry-After %q for the client's own deadline", got)
	}
	sources[spi.SourceGraph] = retriever.SourceStatus{Status: retriever.StatusTimeout, Error: "deadline of 800ms exceeded"}
	wantError(t, e.do(http.MethodPost, "/v1/query", `{"text":"a","budget_ms":1,"min_sources":2}`), http.StatusServiceUnavailable, api.CodeNotEnoughSources)
}

func TestQueryRetrieverErrors(t *testing.T) {
	const secret = "secret-query-words"
	cases := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"query error", &retriever.QueryError{Field: "sources.graph.k", Message: "too big"}, http.StatusBadRequest, "invalid_sources"},
		{"query error without field", &retriever.QueryError{Message: "bad"}, http.StatusBadRequest, api.CodeInvalidQuery},
		{"backend invalid query", fmt.Errorf("keyword: parse %q: %w", secret, spi.ErrInvalidQuery), http.StatusBadRequest, api.CodeInvalidQuery},
		{"plain not enough sources", retriever.ErrNotEnoughSources, http.StatusServiceUnavailable, api.CodeNotEnoughSources},
		{"unavailable", fmt.Errorf("vector: %w", spi.ErrUnavailable), http.StatusServiceUnavailable, api.CodeUnavailable},
		{"deadline", fmt.Errorf("retriever: %w", context.DeadlineExceeded), http.StatusGatewayTimeout, api.CodeTimeout},
		{"canceled", context.Canceled, 499, api.CodeClientClosedRequest},
		{"client gone (broken pipe)", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, 499, api.CodeClientClosedRequest},
		{"client gone (reset)", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}, 499, api.CodeClientClosedRequest},
		{"anything else", errors.New("pool: internal state /var/lib/x corrupted"), http.StatusInternalServerError, api.CodeInternal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.searcher.RetrieveFn = func(context.Context, retriever.Query) (*retriever.Result, error) { return nil, tc.err }
			d := wantError(t, e.do(http.MethodPost, "/v1/query", `{"text":"a"}`), tc.status, tc.code)
			if strings.Contains(d.Message, secret) || strings.Contains(d.Message, "/var/lib") {
				t.Fatalf("message leaks internals: %q", d.Message)
			}
			if tc.code == api.CodeInternal && !strings.Contains(d.Message, d.RequestID) {
				t.Fatalf("internal error message %q does not quote the request id %q", d.Message, d.RequestID)
			}
		})
	}
}

func TestQueryNilResultIsInternal(t *testing.T) {
	e := newEnv(t, nil)
	e.searcher.RetrieveFn = func(context.Context, retriever.Query) (*retriever.Result, error) { return nil, nil }
	wantError(t, e.do(http.MethodPost, "/v1/query", `{"text":"a"}`), http.StatusInternalServerError, api.CodeInternal)
}

func TestQueryPanicIsInternal(t *testing.T) {
	e := newEnv(t, nil)
	e.searcher.RetrieveFn = func(context.Context, retriever.Query) (*retriever.Result, error) { panic("boom") }
	wantError(t, e.do(http.MethodPost, "/v1/query", `{"text":"a"}`), http.StatusInternalServerError, api.CodeInternal)
	if !strings.Contains(e.logs.String(), "panic recovered") {
		t.Fatalf("panic not logged: %s", e.logs.String())
	}
	// The server keeps serving.
	e.searcher.RetrieveFn = nil
	decodeAs[retriever.Result](t, e.do(http.MethodPost, "/v1/query", `{"text":"a"}`), http.StatusOK)
}

func TestQueryRequestTimeoutIs504(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.Server.RequestTimeoutS = 1 })
	e.searcher.RetrieveFn = func(ctx context.Context, _ retriever.Query) (*retriever.Result, error) {
		if _, ok := ctx.Deadline(); !ok {
			return nil, errors.New("no deadline on the request context")
		}
		<-ctx.Done()
		return nil, fmt.Errorf("retriever: %w", ctx.Err())
	}
	wantError(t, e.do(http.MethodPost, "/v1/query", `{"text":"a"}`), http.StatusGatewayTimeout, api.CodeTimeout)
}

func TestQueryTenantBinding(t *testing.T) {
	e := newEnv(t, nil)
	// A bound key's tenant is forced onto the query.
	decodeAs[retriever.Result](t, e.do(http.MethodPost, "/v1/query", `{"text":"a"}`, "Authorization", "Bearer "+acmeQueryKey), http.StatusOK)
	decodeAs[retriever.Result](t, e.do(http.MethodPost, "/v1/query", `{"text":"a","tenant":"acme"}`, "Authorization", "Bearer "+acmeQueryKey), http.StatusOK)
	// Another tenant is refused.
	d := wantError(t, e.do(http.MethodPost, "/v1/query", `{"text":"a","tenant":"globex"}`, "Authorization", "Bearer "+acmeQueryKey),
		http.StatusForbidden, api.CodeTenantForbidden)
	if d.Field != "tenant" {
		t.Fatalf("field %q", d.Field)
	}
	// An unbound key may name any tenant, or none.
	decodeAs[retriever.Result](t, e.do(http.MethodPost, "/v1/query", `{"text":"a","tenant":"globex"}`, "Authorization", "Bearer "+queryKey), http.StatusOK)
	decodeAs[retriever.Result](t, e.do(http.MethodPost, "/v1/query", `{"text":"a"}`, "Authorization", "Bearer "+queryKey), http.StatusOK)

	var tenants []string
	for _, q := range e.searcher.calls() {
		tenants = append(tenants, q.Tenant)
	}
	if want := []string{"acme", "acme", "globex", ""}; strings.Join(tenants, ",") != strings.Join(want, ",") {
		t.Fatalf("tenants %q, want %q", tenants, want)
	}
}

// TestQueryHugeWeightsAre400 is issue 12 item 1: weights so large that the
// fused score overflows must be refused up front, not answered with a 500
// from the JSON encoder.
func TestQueryHugeWeightsAre400(t *testing.T) {
	e := newEnv(t, nil)
	body := `{"text":"circuit breaker","fusion":{"mode":"score"},"sources":{"keyword":{"weight":1e308},"vector":{"weight":1e308}}}`
	d := wantError(t, e.do(http.MethodPost, "/v1/query", body), http.StatusBadRequest, "invalid_sources")
	if d.Field != "sources.keyword.weight" {
		t.Fatalf("field %q, want sources.keyword.weight", d.Field)
	}
	d = wantError(t, e.do(http.MethodPost, "/v1/query", `{"text":"a","expand":{"weight":1e300}}`), http.StatusBadRequest, "invalid_expand")
	if d.Field != "expand.weight" {
		t.Fatalf("field %q, want expand.weight", d.Field)
	}
	w := retriever.MaxWeight
	decodeAs[retriever.Result](t, e.do(http.MethodPost, "/v1/query", fmt.Sprintf(`{"text":"a","sources":{"keyword":{"weight":%d}}}`, w)), http.StatusOK)
}

// TestQueryNonFiniteNumbersNeverReachTheEncoder: whatever a searcher
// computes, a non-finite score is not a 500.
func TestQueryNonFiniteNumbersNeverReachTheEncoder(t *testing.T) {
	e := newEnv(t, nil)
	inf := math.Inf(1)
	e.searcher.RetrieveFn = func(context.Context, retriever.Query) (*retriever.Result, error) {
		return &retriever.Result{
			Hits: []retriever.Hit{
				{ID: "a", Rank: 1, Score: inf, Explain: map[string]*retriever.Contribution{
					spi.SourceKeyword: {Rank: 1, RawScore: math.NaN(), Contribution: inf}, spi.SourceVector: nil}},
				{ID: "b", Rank: 2, Score: math.Inf(-1)},
			},
			Sources: map[string]retriever.SourceStatus{spi.SourceKeyword: {Status: retriever.StatusOK, Returned: 2}},
			Fusion:  retriever.FusionSettings{Mode: "score", Weights: map[string]float64{spi.SourceKeyword: inf}},
			Missing: []string{}, Total: 2, Limit: 10,
		}, nil
	}
	res := decodeAs[retriever.Result](t, e.do(http.MethodPost, "/v1/query", `{"text":"a"}`), http.StatusOK)
	if len(res.Hits) != 2 || res.Hits[0].Score != math.MaxFloat64 || res.Hits[1].Score != -math.MaxFloat64 {
		t.Fatalf("hits %+v", res.Hits)
	}
	if c := res.Hits[0].Explain[spi.SourceKeyword]; c == nil || c.RawScore != 0 || c.Contribution != math.MaxFloat64 {
		t.Fatalf("explain %+v", res.Hits[0].Explain)
	}
	if res.Fusion.Weights[spi.SourceKeyword] != math.MaxFloat64 {
		t.Fatalf("weights %+v", res.Fusion.Weights)
	}
	if !strings.Contains(e.logs.String(), "non-finite") {
		t.Fatalf("the clamp was not logged: %s", e.logs.String())
	}
}

// TestQueryInvalidForABackendIs400 is issue 12 item 2: a query every
// backend would reject is a 400 up front, never a 503 or a silently
// partial answer.
func TestQueryInvalidForABackendIs400(t *testing.T) {
	e := newEnv(t, nil)
	d := wantError(t, e.do(http.MethodPost, "/v1/query", `{"vector":[0,0,0,0]}`), http.StatusBadRequest, "invalid_vector")
	if d.Field != "vector" {
		t.Fatalf("field %q", d.Field)
	}
	words := strings.TrimSpace(strings.Repeat("ab ", retriever.MaxQueryTerms+1))
	d = wantError(t, e.do(http.MethodPost, "/v1/query", `{"text":"`+words+`"}`), http.StatusBadRequest, "invalid_text")
	if d.Field != "text" || !strings.Contains(d.Message, fmt.Sprint(retriever.MaxQueryTerms)) {
		t.Fatalf("field %q message %q", d.Field, d.Message)
	}
	if n := len(e.searcher.calls()); n != 0 {
		t.Fatalf("searcher called %d times", n)
	}
	// At the limit the query goes through.
	words = strings.TrimSpace(strings.Repeat("ab ", retriever.MaxQueryTerms))
	decodeAs[retriever.Result](t, e.do(http.MethodPost, "/v1/query", `{"text":"`+words+`"}`), http.StatusOK)

	// A source that still rejects the query as invalid makes the answer a
	// 400, not a 503 not_enough_sources.
	e.searcher.RetrieveFn = func(context.Context, retriever.Query) (*retriever.Result, error) {
		return nil, &retriever.NotEnoughSourcesError{Required: 1, Healthy: 0, Sources: map[string]retriever.SourceStatus{
			spi.SourceKeyword: {Status: retriever.StatusError, Error: retriever.ReasonInvalidQuery},
			spi.SourceVector:  {Status: retriever.StatusDisabled},
		}}
	}
	d = wantError(t, e.do(http.MethodPost, "/v1/query", `{"text":"a"}`), http.StatusBadRequest, api.CodeInvalidQuery)
	if d.Sources[spi.SourceKeyword].Error != retriever.ReasonInvalidQuery {
		t.Fatalf("sources %+v", d.Sources)
	}
	if strings.Contains(e.logs.String(), `"level":"ERROR"`) {
		t.Fatalf("an invalid query was logged as an error: %s", e.logs.String())
	}
}
