package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragd/ragd/api"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/internal/apptest"
	"github.com/ragd/ragd/spi"
)

// Keys of the authenticated test server.
const (
	testAdminKey = apptest.AdminKey
	testQueryKey = apptest.QueryKey
)

// liveRagd is a real ragd (embedded stores) serving on loopback.
type liveRagd struct{ *apptest.Ragd }

// startTestRagd starts a real ragd with auth off and every source on (see
// apptest.Start), lets configure adjust the config, and serves it until the
// test ends.
func startTestRagd(t *testing.T, configure func(*config.Config)) *liveRagd {
	t.Helper()
	return &liveRagd{apptest.Start(t, configure)}
}

// withAuth turns auth on with an admin and a query key.
func withAuth(cfg *config.Config) { apptest.WithAuth(cfg) }

// docs hydrates ids from the server's system of record.
func (s *liveRagd) docs(t *testing.T, ids ...string) map[string]spi.Document {
	t.Helper()
	found, _, err := s.App.Vector.Hydrate(context.Background(), ids)
	if err != nil {
		t.Fatalf("hydrate: %v", err)
	}
	out := make(map[string]spi.Document, len(found))
	for _, d := range found {
		out[d.ID] = d
	}
	return out
}

// writeJSONL writes one JSON line per doc (strings are written as they
// are, to produce malformed lines) and returns the file's path.
func writeJSONL(t *testing.T, dir, name string, lines ...any) string {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		if s, ok := l.(string); ok {
			b.WriteString(s + "\n")
			continue
		}
		j, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// numberedDocs returns n small JSONL documents d1..dn.
func numberedDocs(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = spi.Document{ID: fmt.Sprintf("d%d", i+1), Title: fmt.Sprintf("document %d", i+1), Text: "wing flutter at transonic speeds"}
	}
	return out
}

// apiErrorServer answers every request with status and an API error body.
func apiErrorServer(t *testing.T, status int, detail api.ErrorDetail) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(api.ErrorResponse{Error: detail})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func fileExists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	return err == nil
}

// newStaticServer answers every request with status and body.
func newStaticServer(t *testing.T, status int, contentType, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
