package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/eval"
	"github.com/ragd/ragd/ingest"
	"github.com/ragd/ragd/internal/benchutil"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi/spitest"
)

// BenchmarkCranfieldQuery is the read path's CPU cost on the embedded
// default stack (the shipped defaults: keyword and vector, DBSF) with
// Cranfield ingested: "retrieve" calls the retriever, "http" sends the
// same queries through the API handler (JSON decoding, middleware and
// encoding included), "graph" is retrieve with the graph source and its
// expansion switched on. Queries run round-robin from 8
// goroutines, like the load benchmark's 8 clients. cpu-ms/op is the
// process's user+system CPU time per query (getrusage), which machine load
// inflates far less than wall time:
//
//	go test -run '^$' -bench CranfieldQuery -benchtime 2000x ./app/
func BenchmarkCranfieldQuery(b *testing.B) {
	ds, err := eval.LoadBEIR(spitest.CranfieldDir(b), "test")
	if err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	off := false
	cfg.Auth.Enabled = &off
	cfg.DataDir = b.TempDir()
	cfg.Embedder.Kind = config.KindHashing
	a := newApp(b, &cfg)
	defer a.Close()
	ctx := context.Background()
	var docs = ds.Corpus[:0]
	for _, d := range ds.Corpus {
		if d.Text != "" || d.Title != "" {
			docs = append(docs, d)
		}
	}
	for i := 0; i < len(docs); i += 256 {
		for _, r := range a.Pipeline.Upsert(ctx, docs[i:min(i+256, len(docs))], ingest.WriteOptions{Wait: time.Minute}) {
			if r.Status == "failed" {
				b.Fatalf("ingest %s: %+v", r.ID, r)
			}
		}
	}
	srv, err := a.API()
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	texts := make([]string, len(ds.Queries))
	bodies := make([][]byte, len(ds.Queries))
	for i, q := range ds.Queries {
		texts[i] = q.Text
		bodies[i], _ = json.Marshal(map[string]string{"text": q.Text})
	}
	run := func(b *testing.B, one func(i int)) {
		for i := range 50 { // warm caches and the JIT-free Go runtime's pools
			one(i)
		}
		b.SetParallelism(4) // 8 goroutines on 2 cores
		var next int64
		cpu0 := benchutil.CPUTime()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				one(int(atomicAdd(&next)))
			}
		})
		b.StopTimer()
		cpu := benchutil.CPUTime() - cpu0
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
	b.Run("retrieve", func(b *testing.B) {
		run(b, func(i int) {
			if _, err := a.Retriever.Retrieve(ctx, retriever.Query{Text: texts[i%len(texts)]}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("graph", func(b *testing.B) {
		on := true
		q := retriever.Query{Expand: retriever.ExpandOptions{Enabled: &on},
			Sources: map[string]retriever.SourceOptions{"graph": {Enabled: &on, Weight: 1}}}
		run(b, func(i int) {
			q.Text = texts[i%len(texts)]
			if _, err := a.Retriever.Retrieve(ctx, q); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("http", func(b *testing.B) {
		run(b, func(i int) {
			req := httptest.NewRequest(http.MethodPost, "/v1/query", bytes.NewReader(bodies[i%len(bodies)]))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
			}
		})
	})
}

func atomicAdd(p *int64) int64 { return atomic.AddInt64(p, 1) }
