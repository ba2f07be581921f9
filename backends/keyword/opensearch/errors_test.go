package opensearch_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragd/ragd/backends/keyword/opensearch"
	"github.com/ragd/ragd/spi"
)

// rejecting answers the requests whose path has reject in it as a busy
// cluster does (429, es_rejected_execution_exception), or, for a bulk
// request, with one rejected item; every other request goes to the real
// node.
type rejecting struct {
	reject string
	bulk   bool
}

func (r rejecting) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.Contains(req.URL.Path, r.reject) {
		return http.DefaultTransport.RoundTrip(req)
	}
	body := `{"error":{"root_cause":[{"type":"es_rejected_execution_exception","reason":"rejected execution of search"}],` +
		`"type":"es_rejected_execution_exception","reason":"rejected execution of search"},"status":429}`
	status := http.StatusTooManyRequests
	if r.bulk {
		status = http.StatusOK
		body = `{"took":1,"errors":true,"items":[{"index":{"_index":"x","_id":"a","status":429,` +
			`"error":{"type":"es_rejected_execution_exception","reason":"rejected execution of bulk"}}}]}`
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// A cluster refusing work for load (429) is overloaded, not failing: the
// one classification (spi.OutcomeOf) counts it as neutral, so it sheds
// load without tripping the breaker; a search, a bulk item and a lookup.
func TestRejectedExecutionIsOverload(t *testing.T) {
	url := shared(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		tr   rejecting
		call func(b *opensearch.Backend) error
	}{
		{"search", rejecting{reject: "/_search"}, func(b *opensearch.Backend) error {
			_, err := b.Retrieve(ctx, spi.KeywordRequest{Text: "turbine", K: 5})
			return err
		}},
		{"bulk item", rejecting{reject: "/_bulk", bulk: true}, func(b *opensearch.Backend) error {
			d := spi.Document{ID: "a", Title: "turbine", Text: "blades"}
			return b.ApplyChanges(ctx, "log", []spi.Change{{Seq: 1, Op: spi.OpUpsert, ID: "a", Doc: &d, Version: 1}}, 1)
		}},
		{"records", rejecting{reject: "/_mget"}, func(b *opensearch.Backend) error {
			return b.ApplyChanges(ctx, "log", []spi.Change{{Seq: 1, Op: spi.OpDelete, ID: "a", Version: 1}}, 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := open(t, url, opensearch.Config{Transport: tc.tr})
			err := tc.call(b)
			if !errors.Is(err, spi.ErrOverloaded) || !errors.Is(err, spi.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrOverloaded and ErrUnavailable", err)
			}
			if o := spi.OutcomeOf(ctx, err); o != spi.OutcomeNeutral {
				t.Fatalf("outcome %v, want neutral", o)
			}
			if strings.Contains(err.Error(), "turbine") {
				t.Fatalf("the error quotes the request: %v", err)
			}
		})
	}
}

// Errors say whose fault: a query the cluster cannot parse is invalid, an
// unreachable node unavailable (and fails within the connect timeout), a
// closed backend unavailable.
func TestErrorClasses(t *testing.T) {
	url := shared(t)
	ctx := context.Background()
	b := open(t, url, opensearch.Config{})
	d := spi.Document{ID: "a", Tenant: "t", Title: "turbine", Text: "blades"}
	if err := b.ApplyChanges(ctx, "log", []spi.Change{{Seq: 1, Op: spi.OpUpsert, ID: "a", Doc: &d, Version: 1}}, 1); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`title:(turbine`, `"unterminated`, `a:b:c(`} {
		_, err := b.Retrieve(ctx, spi.KeywordRequest{Text: q, K: 5, Syntax: true, Tenant: "t"})
		if !errors.Is(err, spi.ErrInvalidQuery) || strings.Contains(err.Error(), "turbine") {
			t.Errorf("syntax %q: err = %v, want ErrInvalidQuery that does not quote the query", q, err)
		}
	}
	refs, err := b.Retrieve(ctx, spi.KeywordRequest{Text: "title:turbine", K: 5, Syntax: true, Tenant: "t"})
	if err != nil || len(refs) != 1 {
		t.Fatalf("syntax title:turbine = %v, %v", refs, err)
	}

	// Nothing listens on port 1.
	_, err = opensearch.Open(ctx, opensearch.Config{Hosts: []string{"http://127.0.0.1:1"}, ConnectTimeout: 300 * time.Millisecond})
	if !errors.Is(err, spi.ErrUnavailable) {
		t.Fatalf("Open on a closed port: %v, want ErrUnavailable", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Retrieve(ctx, spi.KeywordRequest{Text: "turbine", K: 5}); !errors.Is(err, spi.ErrUnavailable) {
		t.Fatalf("Retrieve after Close: %v, want ErrUnavailable", err)
	}
	if h := b.Health(ctx); h.Status != spi.StatusDown {
		t.Fatalf("Health after Close: %+v", h)
	}
}

func TestHealthAndCount(t *testing.T) {
	url := shared(t)
	ctx := context.Background()
	b := open(t, url, opensearch.Config{})
	if h := b.Health(ctx); h.Status != spi.StatusUp || !strings.Contains(h.Detail, "green") || !strings.Contains(h.Detail, "0 documents") {
		t.Fatalf("Health = %+v, want up, green, 0 documents", h)
	}
	d := spi.Document{ID: "a", Tenant: "t", Title: "turbine", Text: "blades"}
	if err := b.ApplyChanges(ctx, "log", []spi.Change{{Seq: 1, Op: spi.OpUpsert, ID: "a", Doc: &d, Version: 1}}, 1); err != nil {
		t.Fatal(err)
	}
	if h := b.Health(ctx); !strings.Contains(h.Detail, "1 documents") {
		t.Fatalf("Health = %+v, want 1 documents", h)
	}
}

// An index made with other settings is refused at open, not misread.
func TestIncompatibleIndexRefused(t *testing.T) {
	url := shared(t)
	ctx := context.Background()
	b := open(t, url, opensearch.Config{})
	d := spi.Document{ID: "a", Tenant: "t", Title: "turbine", Text: "blades"}
	if err := b.ApplyChanges(ctx, "log", []spi.Change{{Seq: 1, Op: spi.OpUpsert, ID: "a", Doc: &d, Version: 1}}, 1); err != nil {
		t.Fatal(err)
	}
	prefix := b.Prefix()
	_, err := opensearch.Open(ctx, opensearch.Config{Hosts: []string{url}, IndexPrefix: prefix, Analyzer: "en_nostem"})
	if !errors.Is(err, opensearch.ErrIncompatible) {
		t.Fatalf("Open with another analyzer: %v, want ErrIncompatible", err)
	}
	again, err := opensearch.Open(ctx, opensearch.Config{Hosts: []string{url}, IndexPrefix: prefix})
	if err != nil {
		t.Fatalf("Open with the same settings: %v", err)
	}
	_ = again.Close()
}
