package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ragd/ragd/breaker"
	"github.com/ragd/ragd/spi"
)

// fakeBackend implements every spi retrieval interface (and spi.Indexer) with
// an injectable error and call counters.
type fakeBackend struct {
	err    error // returned by the guarded methods
	health spi.Health
	calls  map[string]int
}

func newFake() *fakeBackend {
	return &fakeBackend{health: spi.Health{Status: spi.StatusUp}, calls: map[string]int{}}
}

func (f *fakeBackend) hit(m string) { f.calls[m]++ }

func (f *fakeBackend) refs(m string) ([]spi.Ref, error) {
	f.hit(m)
	if f.err != nil {
		return nil, f.err
	}
	return []spi.Ref{{ID: "d1", Score: 1, Source: m}}, nil
}

func (f *fakeBackend) RetrieveVector(_ context.Context, _ spi.VectorRequest) ([]spi.Ref, error) {
	return f.refs("retrieve")
}

func (f *fakeBackend) Hydrate(_ context.Context, ids []string) ([]spi.Document, []string, error) {
	f.hit("hydrate")
	return []spi.Document{{ID: ids[0]}}, nil, nil
}

func (f *fakeBackend) Health(context.Context) spi.Health { f.hit("health"); return f.health }

func (f *fakeBackend) Expand(context.Context, []string, spi.ExpandOptions) ([]spi.Ref, error) {
	return f.refs("expand")
}

func (f *fakeBackend) MatchEntities(context.Context, spi.KeywordRequest) ([]spi.Ref, error) {
	return f.refs("match")
}

func (f *fakeBackend) Query(context.Context, string, map[string]any) ([]map[string]any, error) {
	f.hit("query")
	return []map[string]any{{"n": 1}}, nil
}

func (f *fakeBackend) Embed(_ context.Context, texts []string) ([][]float32, error) {
	f.hit("embed")
	if f.err != nil {
		return nil, f.err
	}
	return make([][]float32, len(texts)), nil
}

func (f *fakeBackend) Dimension() int { return 8 }

func (f *fakeBackend) Upsert(context.Context, []spi.Document) error { f.hit("upsert"); return nil }
func (f *fakeBackend) Delete(context.Context, []string) error       { f.hit("delete"); return nil }

type fakeVector struct{ *fakeBackend }

func (f fakeVector) Retrieve(ctx context.Context, req spi.VectorRequest) ([]spi.Ref, error) {
	return f.RetrieveVector(testCtx, req)
}

type fakeKeyword struct{ *fakeBackend }

func (f fakeKeyword) Retrieve(context.Context, spi.KeywordRequest) ([]spi.Ref, error) {
	return f.refs("retrieve")
}

var (
	_ spi.VectorRetrievalBackend  = fakeVector{}
	_ spi.KeywordRetrievalBackend = fakeKeyword{}
	_ spi.GraphRetrievalBackend   = (*fakeBackend)(nil)
	_ spi.Embedder                = (*fakeBackend)(nil)
	_ spi.Indexer                 = (*fakeBackend)(nil)
)

// wrapperCase drives one wrapper: guarded lists the calls that go through the
// breaker, passthrough the ones that must not.
type wrapperCase struct {
	name        string
	wrap        func(f *fakeBackend, b *breaker.Breaker) any
	guarded     map[string]func(w any) error
	passthrough map[string]func(w any) error
	health      func(w any) spi.Health // nil: no Health
}

var testCtx = context.Background()

func wrapperCases() []wrapperCase {
	hydrate := func(w any) error {
		_, _, err := w.(spi.Hydrator).Hydrate(testCtx, []string{"d1"})
		return err
	}
	health := func(w any) spi.Health { return w.(spi.HealthChecker).Health(testCtx) }
	return []wrapperCase{
		{
			name: "vector",
			wrap: func(f *fakeBackend, b *breaker.Breaker) any { return breaker.Vector(fakeVector{f}, b) },
			guarded: map[string]func(any) error{"retrieve": func(w any) error {
				_, err := w.(spi.VectorRetrievalBackend).Retrieve(testCtx, spi.VectorRequest{K: 1})
				return err
			}},
			passthrough: map[string]func(any) error{"hydrate": hydrate},
			health:      health,
		},
		{
			name: "keyword",
			wrap: func(f *fakeBackend, b *breaker.Breaker) any { return breaker.Keyword(fakeKeyword{f}, b) },
			guarded: map[string]func(any) error{"retrieve": func(w any) error {
				_, err := w.(spi.KeywordRetrievalBackend).Retrieve(testCtx, spi.KeywordRequest{Text: "x", K: 1})
				return err
			}},
			passthrough: map[string]func(any) error{"hydrate": hydrate},
			health:      health,
		},
		{
			name: "graph",
			wrap: func(f *fakeBackend, b *breaker.Breaker) any { return breaker.Graph(f, b) },
			guarded: map[string]func(any) error{
				"expand": func(w any) error {
					_, err := w.(spi.GraphRetrievalBackend).Expand(testCtx, []string{"d0"}, spi.ExpandOptions{Hops: 1, Limit: 5})
					return err
				},
				"match": func(w any) error {
					_, err := w.(spi.GraphRetrievalBackend).MatchEntities(testCtx, spi.KeywordRequest{Text: "x", K: 1})
					return err
				},
			},
			passthrough: map[string]func(any) error{
				"hydrate": hydrate,
				"query": func(w any) error {
					_, err := w.(spi.GraphRetrievalBackend).Query(testCtx, "MATCH (n) RETURN n", nil)
					return err
				},
			},
			health: health,
		},
		{
			name: "embedder",
			wrap: func(f *fakeBackend, b *breaker.Breaker) any { return breaker.Embedder(f, b) },
			guarded: map[string]func(any) error{"embed": func(w any) error {
				_, err := w.(spi.Embedder).Embed(testCtx, []string{"a", "b"})
				return err
			}},
			passthrough: map[string]func(any) error{"dimension": func(w any) error {
				if d := w.(spi.Embedder).Dimension(); d != 8 {
					return fmt.Errorf("Dimension() = %d", d)
				}
				return nil
			}},
		},
	}
}

func TestWrappersRouteThroughBreaker(t *testing.T) {
	for _, tc := range wrapperCases() {
		for method, call := range tc.guarded {
			t.Run(tc.name+"/"+method, func(t *testing.T) {
				clock := newClock()
				cfg := testConfig(clock, 2)
				b := mustNew(t, tc.name, cfg)
				f := newFake()
				w := tc.wrap(f, b)
				if g, ok := w.(breaker.Guarded); !ok || g.Breaker() != b {
					t.Fatal("wrapper does not expose its breaker through Guarded")
				}

				if err := call(w); err != nil {
					t.Fatalf("healthy call: %v", err)
				}
				// Invalid queries never count, even with ShouldCount unset.
				f.err = fmt.Errorf("%s: %w: bad vector", tc.name, spi.ErrInvalidQuery)
				for range 5 {
					if err := call(w); !errors.Is(err, spi.ErrInvalidQuery) {
						t.Fatalf("invalid query returned %v", err)
					}
				}
				wantState(t, b, breaker.Closed)
				// Backend failures do.
				f.err = fmt.Errorf("%s: %w: connection refused", tc.name, spi.ErrUnavailable)
				_ = call(w)
				_ = call(w)
				wantState(t, b, breaker.Open)
				before := f.calls[method]
				err := call(w)
				if !errors.Is(err, breaker.ErrOpen) || !errors.Is(err, spi.ErrUnavailable) {
					t.Fatalf("call while open = %v, want ErrOpen and spi.ErrUnavailable", err)
				}
				if f.calls[method] != before {
					t.Fatal("backend called while the breaker was open")
				}
				for name, pass := range tc.passthrough {
					if err := pass(w); err != nil {
						t.Fatalf("%s while open: %v, want a straight pass-through", name, err)
					}
				}
				if tc.health != nil {
					healthCalls := f.calls["health"]
					if h := tc.health(w); h.Status != spi.StatusDown || h.Detail != "circuit open" {
						t.Fatalf("Health while open = %+v", h)
					}
					if f.calls["health"] != healthCalls {
						t.Fatal("Health asked the backend while open")
					}
					clock.Advance(cfg.ResetTimeout)
					if h := tc.health(w); h.Status != spi.StatusDegraded {
						t.Fatalf("Health while half-open = %+v, want degraded", h)
					}
					f.health = spi.Health{Status: spi.StatusDown, Detail: "ping: refused"}
					if h := tc.health(w); h.Status != spi.StatusDown || h.Detail != "ping: refused" {
						t.Fatalf("Health while half-open with a down backend = %+v, want the backend's down", h)
					}
					f.health = spi.Health{Status: spi.StatusUp}
				} else {
					clock.Advance(cfg.ResetTimeout)
				}
				f.err = nil
				if err := call(w); err != nil {
					t.Fatalf("trial: %v", err)
				}
				wantState(t, b, breaker.Closed)
				if tc.health != nil {
					if h := tc.health(w); h.Status != spi.StatusUp {
						t.Fatalf("Health while closed = %+v, want the backend's own", h)
					}
				}
			})
		}
	}
}

func TestWrappersUnwrapToInnerBackend(t *testing.T) {
	b := mustNew(t, "x", breaker.DefaultConfig())
	f := newFake()
	v := breaker.Vector(fakeVector{f}, b)
	inner := v.(interface {
		Unwrap() spi.VectorRetrievalBackend
	}).Unwrap()
	if ix, ok := inner.(spi.Indexer); !ok {
		t.Fatal("optional spi.Indexer not reachable through Unwrap")
	} else if err := ix.Upsert(testCtx, nil); err != nil || f.calls["upsert"] != 1 {
		t.Fatal("Upsert did not reach the backend")
	}
	if _, ok := breaker.Keyword(fakeKeyword{f}, b).(interface {
		Unwrap() spi.KeywordRetrievalBackend
	}); !ok {
		t.Fatal("keyword wrapper lacks Unwrap")
	}
	if g := breaker.Graph(f, b).(interface {
		Unwrap() spi.GraphRetrievalBackend
	}); g.Unwrap() != spi.GraphRetrievalBackend(f) {
		t.Fatal("graph wrapper unwraps to something else")
	}
	if e := breaker.Embedder(f, b).(interface{ Unwrap() spi.Embedder }); e.Unwrap() != spi.Embedder(f) {
		t.Fatal("embedder wrapper unwraps to something else")
	}
}

func TestWrapperRetrieveAllocatesNoMoreThanBackend(t *testing.T) {
	b := mustNew(t, "x", breaker.DefaultConfig())
	f := &nopVector{}
	w := breaker.Vector(f, b)
	req := spi.VectorRequest{K: 1}
	if n := testing.AllocsPerRun(100, func() { _, _ = w.Retrieve(testCtx, req) }); n != 0 {
		t.Fatalf("guarded Retrieve allocates %v times over a non-allocating backend", n)
	}
}

type nopVector struct{}

func (nopVector) Retrieve(context.Context, spi.VectorRequest) ([]spi.Ref, error) { return nil, nil }
func (nopVector) Hydrate(context.Context, []string) ([]spi.Document, []string, error) {
	return nil, nil, nil
}
func (nopVector) Health(context.Context) spi.Health { return spi.Health{Status: spi.StatusUp} }
