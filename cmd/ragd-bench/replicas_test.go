package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/internal/loadgen"
)

// fakeReplica answers queries, upserts (counting documents) and health
// with a keyword store some entries behind and a dormant graph.
type fakeReplica struct {
	queries, upserts, docs atomic.Int64
}

func (f *fakeReplica) server(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
		case "/v1/query":
			f.queries.Add(1)
			fmt.Fprint(w, `{"partial":false,"sources":{"keyword":{"status":"ok"}}}`)
		case "/v1/documents":
			var req struct {
				Documents []json.RawMessage `json:"documents"`
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			f.upserts.Add(1)
			f.docs.Add(int64(len(req.Documents)))
			fmt.Fprintf(w, `{"results":[],"total":%d,"ok":%d,"failed":0}`, len(req.Documents), len(req.Documents))
		case "/v1/status/health":
			fmt.Fprint(w, `{"status":"up","components":{},"usable":["keyword"],"log":{"head":10,"stores":[{"store":"keyword","applied":7,"behind":3,"lag_seconds":0.5},{"store":"graph","behind":10,"dormant":true}]}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The clients are spread over both replicas, the writes go through the
// first only, and the rows name each replica with its lag (dormant stores
// left out).
func TestReplicasRun(t *testing.T) {
	var a, b fakeReplica
	sa, sb := a.server(t), b.server(t)
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus.jsonl")
	if err := os.WriteFile(corpus, []byte("{\"_id\":\"1\",\"text\":\"wing\"}\nnot json\n{\"_id\":\"2\",\"title\":\"\",\"text\":\"\"}\n{\"_id\":\"3\",\"text\":\"flutter\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := replicaFlags{urls: sa.URL + "," + sb.URL, writeDocs: corpus, writeRate: 100, writeBatch: 5,
		lagEvery: 50 * time.Millisecond, drain: time.Second}
	var out bytes.Buffer
	cfg := loadgen.Config{Queries: []string{"q"}, Clients: 3, Duration: 300 * time.Millisecond}
	if err := f.run(context.Background(), &out, cfg, "writes", true); err != nil {
		t.Fatal(err)
	}
	if a.queries.Load() == 0 || b.queries.Load() == 0 {
		t.Fatalf("queries A %d, B %d; want both > 0", a.queries.Load(), b.queries.Load())
	}
	if a.upserts.Load() == 0 || a.docs.Load() != 5*a.upserts.Load() || b.upserts.Load() != 0 {
		t.Fatalf("upserts A %d (%d docs), B %d; want batches of 5 through A only", a.upserts.Load(), a.docs.Load(), b.upserts.Load())
	}
	s := out.String()
	for _, want := range []string{"| writes | A (2 clients) |", "| writes | B (1 clients) |", "| writes | all (3 clients) |",
		"keyword 3 / 3 (", "keyword 0.50 / 0.50", "writes through A (target 100 docs/s, batches of 5)",
		fmt.Sprintf("%d docs, %d batches", a.docs.Load(), a.upserts.Load()), "A not within 1s, B not within 1s"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "graph") {
		t.Errorf("a dormant store is reported:\n%s", s)
	}
}

// readDocs leaves out lines that do not parse and empty documents.
func TestReadDocs(t *testing.T) {
	f := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(f, []byte("{\"_id\":\"1\",\"text\":\"a\"}\n{bad\n{\"_id\":\"2\"}\n{\"_id\":\"3\",\"title\":\"t\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	docs, err := readDocs(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].ID != "1" || docs[1].ID != "3" {
		t.Fatalf("docs %+v; want ids 1 and 3", docs)
	}
}
