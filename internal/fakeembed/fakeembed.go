// Package fakeembed is a fault-injecting OpenAI-compatible embeddings
// server for tests of the embedding path's wiring (caches, guards, ragd
// eval): it answers deterministic vectors, counts the texts it embedded
// and lets a test fail, rate-limit or hold any request through a hook.
// Tests of retrieval quality use a real model instead (internal/testenv).
package fakeembed

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Server is the fake. Its zero value is not usable; call New.
type Server struct {
	// URL is the base URL to configure (embedder.base_url).
	URL string
	dim int

	mu       sync.Mutex
	embedded []string
	requests [][]string
	handle   func(inputs []string, w http.ResponseWriter, r *http.Request) bool
}

// IsProbe reports a request of openai.Probe or of a recovery probe (with
// any prefix the embedder adds), which the server answers without counting
// it or passing it to the hook.
func IsProbe(inputs []string) bool {
	return len(inputs) == 1 && (strings.HasSuffix(inputs[0], "ragd dimension probe") || strings.HasSuffix(inputs[0], "ragd recovery probe"))
}

// New starts a server answering dim-dimensional vectors; it stops with the
// test.
func New(tb testing.TB, dim int) *Server {
	tb.Helper()
	s := &Server{dim: dim}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// SetHandle installs a hook that sees every request (probes excepted)
// first; returning true means it answered the request itself.
func (s *Server) SetHandle(h func(inputs []string, w http.ResponseWriter, r *http.Request) bool) {
	s.mu.Lock()
	s.handle = h
	s.mu.Unlock()
}

// Texts returns the texts answered with vectors so far, probes left out.
func (s *Server) Texts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.embedded)
}

// Requests returns the inputs of every request answered with vectors.
func (s *Server) Requests() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Vector is the vector the server answers for text: word counts hashed
// into dim buckets plus a small constant, so texts sharing words are near.
func Vector(text string, dim int) []float32 {
	v := make([]float32, dim)
	v[0] = 0.01
	for _, w := range strings.Fields(strings.ToLower(text)) {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[int(h.Sum32()%uint32(dim))]++
	}
	return v
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	probe := IsProbe(req.Input)
	s.mu.Lock()
	h := s.handle
	s.mu.Unlock()
	if h != nil && !probe && h(req.Input, w, r) {
		return
	}
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	var out struct {
		Data []item `json:"data"`
	}
	for i, text := range req.Input {
		out.Data = append(out.Data, item{Index: i, Embedding: Vector(text, s.dim)})
	}
	if !probe {
		s.mu.Lock()
		s.embedded = append(s.embedded, req.Input...)
		s.requests = append(s.requests, req.Input)
		s.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
