package retriever_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// hydrationStack returns a keyword-only stack returning a b c d, with the
// given hydrators.
func hydrationStack(t *testing.T, hs ...retriever.NamedHydrator) *retriever.HybridRetriever {
	t.Helper()
	kw := &fakeKeyword{fault: fault{Refs: refs("keyword", "a", "b", "c", "d")}}
	return mustNew(t, retriever.Config{Keyword: kw, Hydrators: hs})
}

func docIDs(res *retriever.Result) []string {
	var ids []string
	for _, h := range res.Hits {
		if h.Document != nil {
			ids = append(ids, h.Document.ID)
		}
	}
	return ids
}

func TestHydrationFallback(t *testing.T) {
	sor := &fakeHydrator{docs: docsFor("a", "c")}
	fallback := &fakeHydrator{docs: docsFor("b", "c")}
	r := hydrationStack(t, retriever.NamedHydrator{Name: "sor", Hydrator: sor}, retriever.NamedHydrator{Name: "fb", Hydrator: fallback})
	res := mustRetrieve(t, r, retriever.Query{Text: "q", Limit: 3})
	if got := docIDs(res); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("hydrated %v, want [a b c]", got)
	}
	// Only the page (a b c), and only what the first store lacked went on.
	if got := sor.lastReq().([]string); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("sor asked for %v", got)
	}
	if got := fallback.lastReq().([]string); !slices.Equal(got, []string{"b"}) {
		t.Errorf("fallback asked for %v, want [b]", got)
	}
	if res.Hits[2].Document.Title != "title c" || res.Hits[0].Document.Vector != nil {
		t.Errorf("documents: %+v", res.Hits)
	}
	if res.Partial || res.Degraded || len(res.Missing) != 0 {
		t.Errorf("partial=%v degraded=%v missing=%v", res.Partial, res.Degraded, res.Missing)
	}
	if h := res.Hydration; h["sor"].Status != retriever.StatusOK || h["sor"].Returned != 2 || h["fb"].Returned != 1 {
		t.Errorf("hydration = %+v", h)
	}
}

func TestHydrationFailureDegrades(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      fault
		status retriever.Status
	}{
		{"error", fault{Err: spi.ErrUnavailable}, retriever.StatusError},
		{"panic", fault{Panic: "bad"}, retriever.StatusError},
		{"timeout", fault{Delay: 10 * time.Second}, retriever.StatusTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sor := &fakeHydrator{fault: tc.f, docs: docsFor("a", "b", "c", "d")}
			fallback := &fakeHydrator{docs: docsFor("a", "b")}
			kw := &fakeKeyword{fault: fault{Refs: refs("keyword", "a", "b", "c", "d")}}
			r := mustNew(t, retriever.Config{Keyword: kw,
				Hydrators: []retriever.NamedHydrator{{Name: "sor", Hydrator: sor}, {Name: "fb", Hydrator: fallback}},
				Defaults:  retriever.Defaults{HydrateTimeout: 200 * time.Millisecond}})
			start := time.Now()
			res := mustRetrieve(t, r, retriever.Query{Text: "q"})
			if time.Since(start) > 5*time.Second {
				t.Fatalf("hydration timeout not enforced: %v", time.Since(start))
			}
			if got := fallback.lastReq().([]string); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
				t.Errorf("fallback asked for %v, want every id", got)
			}
			if got := docIDs(res); !slices.Equal(got, []string{"a", "b"}) {
				t.Errorf("hydrated %v", got)
			}
			if !slices.Equal(res.Missing, []string{"c", "d"}) || res.Hits[2].Document != nil {
				t.Errorf("missing = %v", res.Missing)
			}
			if !res.Degraded || !res.Partial {
				t.Errorf("degraded=%v partial=%v", res.Degraded, res.Partial)
			}
			if st := res.Hydration["sor"]; st.Status != tc.status {
				t.Errorf("sor status = %+v, want %s", st, tc.status)
			}
			if len(res.Hits) != 4 {
				t.Errorf("hits = %v", hitIDs(res))
			}
		})
	}
}

func TestHydrationAllFail(t *testing.T) {
	sor := &fakeHydrator{fault: fault{Err: errors.New("down")}}
	r := hydrationStack(t, retriever.NamedHydrator{Name: "sor", Hydrator: sor})
	res := mustRetrieve(t, r, retriever.Query{Text: "q", Limit: 2})
	if !slices.Equal(res.Missing, []string{"a", "b"}) || len(docIDs(res)) != 0 || !res.Degraded {
		t.Errorf("missing=%v docs=%v degraded=%v", res.Missing, docIDs(res), res.Degraded)
	}
}

func TestHydrationCircuitOpenFallsThrough(t *testing.T) {
	// A store whose gate has an open circuit is skipped as a hydrator.
	vec := &fakeVector{docs: docsFor("a", "b", "c", "d")}
	fb := &fakeHydrator{docs: docsFor("a", "b")}
	kw := &fakeKeyword{fault: fault{Refs: refs("keyword", "a", "b", "c", "d")}}
	cfg := retriever.Config{Keyword: kw, Hydrators: []retriever.NamedHydrator{{Name: "vector", Hydrator: vec}, {Name: "fb", Hydrator: fb}}}
	withBreaker(&cfg, mustOpenBreaker(t, "vector"), spi.SourceVector)
	r := mustNew(t, cfg)
	res := mustRetrieve(t, r, retriever.Query{Text: "q", Limit: 2})
	if st := res.Hydration["vector"]; st.Status != retriever.StatusCircuitOpen || st.RetryInMS <= 0 {
		t.Errorf("vector hydrator = %+v", st)
	}
	if !slices.Equal(docIDs(res), []string{"a", "b"}) || !res.Degraded || res.Partial {
		t.Errorf("docs=%v degraded=%v partial=%v", docIDs(res), res.Degraded, res.Partial)
	}
}

// TestHydrationTenantAndNotFound: a tenant-scoped query hydrates only
// that tenant's documents; one of another tenant, or of none (issue 12
// item 17: GET /v1/documents/{id} refuses those too), counts as missing.
func TestHydrationTenantAndNotFound(t *testing.T) {
	docs := docsFor("a", "b", "c")
	for id, tenant := range map[string]string{"a": "mine", "b": "other", "c": ""} {
		d := docs[id]
		d.Tenant = tenant
		docs[id] = d
	}
	sor := &fakeHydrator{docs: docs}
	r := hydrationStack(t, retriever.NamedHydrator{Name: "sor", Hydrator: sor})
	res := mustRetrieve(t, r, retriever.Query{Text: "q", Tenant: "mine"})
	if !slices.Equal(docIDs(res), []string{"a"}) || !slices.Equal(res.Missing, []string{"b", "c", "d"}) {
		t.Errorf("docs=%v missing=%v", docIDs(res), res.Missing)
	}
	// Missing without any failure: partial but not degraded.
	if !res.Partial || res.Degraded {
		t.Errorf("partial=%v degraded=%v", res.Partial, res.Degraded)
	}
	if st := res.Hydration["sor"]; st.Status != retriever.StatusOK || st.Returned != 1 {
		t.Errorf("sor = %+v", st)
	}
}

func TestNoHydrators(t *testing.T) {
	r := hydrationStack(t)
	res := mustRetrieve(t, r, retriever.Query{Text: "q"})
	if len(res.Hits) != 4 || len(docIDs(res)) != 0 || len(res.Missing) != 0 || res.Partial || res.Hydration != nil {
		t.Errorf("without hydrators: %+v", res)
	}
}

func TestHydratorSkippedWhenNothingLeft(t *testing.T) {
	sor := &fakeHydrator{docs: docsFor("a", "b", "c", "d")}
	fb := &fakeHydrator{docs: docsFor("a")}
	r := hydrationStack(t, retriever.NamedHydrator{Name: "sor", Hydrator: sor}, retriever.NamedHydrator{Name: "fb", Hydrator: fb})
	res := mustRetrieve(t, r, retriever.Query{Text: "q"})
	if fb.calls.Load() != 0 || res.Hydration["fb"].Status != retriever.StatusSkipped {
		t.Errorf("fallback called %d times: %+v", fb.calls.Load(), res.Hydration["fb"])
	}
}
