// Package faults injects faults into ragd's read path at run time: a source
// made slow, hung or failing on demand, for load benchmarks and drills in
// the embedded mode, where there is no server to stop. It is off unless
// server.debug_faults is set, and then reachable only by admins (see
// api.Config.Faults).
package faults

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ragd/ragd/spi"
)

// Fault is what a source does on every call while the fault is set.
type Fault struct {
	// DelayMS holds each call this long (cut short by its ctx) before it
	// runs.
	DelayMS int `json:"delay_ms,omitempty"`
	// Hang holds each call until its ctx ends, like a SIGSTOPped server.
	Hang bool `json:"hang,omitempty"`
	// Fail makes each call fail with spi.ErrUnavailable, like a refused
	// connection.
	Fail bool `json:"fail,omitempty"`
}

// Injector holds the faults set per source. The zero value is not usable;
// create it with New.
type Injector struct {
	mu      sync.RWMutex
	faults  map[string]Fault
	changed chan struct{} // closed and replaced on every Set
}

// New returns an injector with no faults set.
func New() *Injector { return &Injector{faults: map[string]Fault{}, changed: make(chan struct{})} }

// Set sets (or, with the zero Fault, clears) the fault of source, one of
// spi.GatedSources. graph covers entity match and expansion alike.
func (in *Injector) Set(source string, f Fault) error {
	if !slices.Contains(spi.GatedSources(), source) || source == spi.SourceGraphExpand {
		return fmt.Errorf("faults: unknown source %q (want vector, keyword, graph or embedder)", source)
	}
	if f.DelayMS < 0 {
		return fmt.Errorf("faults: delay_ms must not be negative")
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if f == (Fault{}) {
		delete(in.faults, source)
	} else {
		in.faults[source] = f
	}
	// Calls held by the old fault look again, as a SIGCONT lets a
	// stopped server answer the requests it holds.
	close(in.changed)
	in.changed = make(chan struct{})
	return nil
}

// List returns the faults set, by source.
func (in *Injector) List() map[string]Fault {
	in.mu.RLock()
	defer in.mu.RUnlock()
	out := make(map[string]Fault, len(in.faults))
	for k, v := range in.faults {
		out[k] = v
	}
	return out
}

// apply runs source's fault, if any, before a call.
func (in *Injector) apply(ctx context.Context, source string) error {
	in.mu.RLock()
	f, ok := in.faults[source]
	changed := in.changed
	in.mu.RUnlock()
	if !ok {
		return nil
	}
	if f.Hang {
		select {
		case <-ctx.Done():
			return fmt.Errorf("faults: %s hung: %w", source, ctx.Err())
		case <-changed:
			return in.apply(ctx, source)
		}
	}
	if f.DelayMS > 0 {
		t := time.NewTimer(time.Duration(f.DelayMS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return fmt.Errorf("faults: %s delayed: %w", source, ctx.Err())
		case <-t.C:
		}
	}
	if f.Fail {
		return fmt.Errorf("faults: %s: %w: injected failure", source, spi.ErrUnavailable)
	}
	return nil
}

// Vector wraps v's Retrieve with the vector fault.
func (in *Injector) Vector(v spi.VectorRetrievalBackend) spi.VectorRetrievalBackend {
	return vector{v, in}
}

// Keyword wraps k's Retrieve with the keyword fault.
func (in *Injector) Keyword(k spi.KeywordRetrievalBackend) spi.KeywordRetrievalBackend {
	return keyword{k, in}
}

// Graph wraps g's MatchEntities and Expand with the graph fault.
func (in *Injector) Graph(g spi.GraphRetrievalBackend) spi.GraphRetrievalBackend {
	return graph{g, in}
}

// Embedder wraps e's Embed with the embedder fault.
func (in *Injector) Embedder(e spi.Embedder) spi.Embedder { return embedder{e, in} }

type vector struct {
	spi.VectorRetrievalBackend
	in *Injector
}

func (w vector) Retrieve(ctx context.Context, req spi.VectorRequest) ([]spi.Ref, error) {
	if err := w.in.apply(ctx, spi.SourceVector); err != nil {
		return nil, err
	}
	return w.VectorRetrievalBackend.Retrieve(ctx, req)
}

type keyword struct {
	spi.KeywordRetrievalBackend
	in *Injector
}

func (w keyword) Retrieve(ctx context.Context, req spi.KeywordRequest) ([]spi.Ref, error) {
	if err := w.in.apply(ctx, spi.SourceKeyword); err != nil {
		return nil, err
	}
	return w.KeywordRetrievalBackend.Retrieve(ctx, req)
}

type graph struct {
	spi.GraphRetrievalBackend
	in *Injector
}

func (w graph) MatchEntities(ctx context.Context, req spi.KeywordRequest) ([]spi.Ref, error) {
	if err := w.in.apply(ctx, spi.SourceGraph); err != nil {
		return nil, err
	}
	return w.GraphRetrievalBackend.MatchEntities(ctx, req)
}

func (w graph) Expand(ctx context.Context, seeds []string, opts spi.ExpandOptions) ([]spi.Ref, error) {
	if err := w.in.apply(ctx, spi.SourceGraph); err != nil {
		return nil, err
	}
	return w.GraphRetrievalBackend.Expand(ctx, seeds, opts)
}

type embedder struct {
	spi.Embedder
	in *Injector
}

func (w embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := w.in.apply(ctx, spi.SourceEmbedder); err != nil {
		return nil, err
	}
	return w.Embedder.Embed(ctx, texts)
}
