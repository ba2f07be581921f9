package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTextsAndMake runs both commands on a small collection, with random
// vectors standing in for the model's: every corpus line gains a unit
// vector and keeps its fields, the queries are the held texts with their
// vectors, and each exact answer is the true top k among the written
// vectors, overall and per tenant.
func TestTextsAndMake(t *testing.T) {
	dir := t.TempDir()
	var corpus, queries strings.Builder
	for i := range 40 {
		fmt.Fprintf(&corpus, `{"_id":"%d","title":"title number %d of the set","text":"the first sentence of document %d is here . a second sentence of document %d follows it . and a third one closes document %d ."}`+"\n", i, i, i, i, i)
	}
	for i := range 5 {
		fmt.Fprintf(&queries, `{"_id":"q%d","text":"what about document %d"}`+"\n", i, i)
	}
	must(t, os.WriteFile(filepath.Join(dir, "corpus.jsonl"), []byte(corpus.String()), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "queries.jsonl"), []byte(queries.String()), 0o644))

	var pool bytes.Buffer
	must(t, run([]string{"texts", "-collection", dir, "-seed", "3"}, &pool))
	lines := strings.Split(strings.TrimSpace(pool.String()), "\n")
	if len(lines) < 100 {
		t.Fatalf("%d pool texts from 40 documents of 4 sentences", len(lines))
	}
	must(t, os.WriteFile(filepath.Join(dir, "pool.jsonl"), pool.Bytes(), 0o644))
	rnd := rand.New(rand.NewPCG(1, 1))
	var vecs strings.Builder
	for range lines {
		v := make([]float32, 8)
		for d := range v {
			v[d] = float32(rnd.NormFloat64())
		}
		b, _ := json.Marshal(v)
		vecs.Write(append(b, '\n'))
	}
	must(t, os.WriteFile(filepath.Join(dir, "pool.vectors"), []byte(vecs.String()), 0o644))
	// The corpus: the collection and copies, as synth_corpus.py names them.
	var synth strings.Builder
	for i := range 300 {
		id := fmt.Sprint(i % 40)
		if i >= 40 {
			id = fmt.Sprintf("%d-copy%d", i%40, i)
		}
		fmt.Fprintf(&synth, `{"id": "%s", "title": "t", "text": "x %d"}`+"\n", id, i)
	}
	must(t, os.WriteFile(filepath.Join(dir, "synth.jsonl"), []byte(synth.String()), 0o644))
	p := func(name string) string { return filepath.Join(dir, name) }
	must(t, run([]string{"make", "-pool", p("pool.jsonl"), "-pool-vectors", p("pool.vectors"), "-corpus", p("synth.jsonl"),
		"-out", p("out.jsonl"), "-queries", p("q.jsonl"), "-exact", p("exact.jsonl"), "-stats", p("stats.md"), "-k", "5", "-sample", "20"}, nil))

	type doc struct {
		ID     string    `json:"id"`
		Title  string    `json:"title"`
		Vector []float32 `json:"vector"`
	}
	docs, err := readJSONL[doc](p("out.jsonl"))
	must(t, err)
	if len(docs) != 300 {
		t.Fatalf("%d documents written, want 300", len(docs))
	}
	for i, d := range docs {
		var n float64
		for _, x := range d.Vector {
			n += float64(x) * float64(x)
		}
		if d.Title != "t" || len(d.Vector) != 8 || math.Abs(n-1) > 1e-5 {
			t.Fatalf("document %d: %+v (norm² %g)", i, d, n)
		}
	}
	type query struct {
		Text   string    `json:"text"`
		Vector []float32 `json:"vector"`
	}
	qs, err := readJSONL[query](p("q.jsonl"))
	must(t, err)
	ex, err := readJSONL[exactLine](p("exact.jsonl"))
	must(t, err)
	if len(qs) == 0 || len(ex) != len(qs) {
		t.Fatalf("%d queries, %d exact answers", len(qs), len(ex))
	}
	for qi, q := range qs {
		// The brute-force top 5, overall and of tenant 1 (lines 1, 4, 7...).
		best := func(tenant int) []string {
			type sc struct {
				id string
				s  float64
			}
			var all []sc
			for i, d := range docs {
				if tenant >= 0 && i%3 != tenant {
					continue
				}
				var s float64
				for k := range d.Vector {
					s += float64(d.Vector[k]) * float64(q.Vector[k])
				}
				all = append(all, sc{d.ID, s})
			}
			var out []string
			for range 5 {
				bi := 0
				for i := range all {
					if all[i].s > all[bi].s {
						bi = i
					}
				}
				out = append(out, all[bi].id)
				all[bi].s = math.Inf(-1)
			}
			return out
		}
		ids := func(hs []hit) []string {
			var out []string
			for _, h := range hs {
				out = append(out, h.ID)
			}
			return out
		}
		if got, want := ids(ex[qi].All), best(-1); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("query %d: exact %v, brute force %v", qi, got, want)
		}
		if got, want := ids(ex[qi].Tenants[1]), best(1); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("query %d tenant 1: exact %v, brute force %v", qi, got, want)
		}
	}
	stats, err := os.ReadFile(p("stats.md"))
	must(t, err)
	if !strings.Contains(string(stats), "| near-copies") || !strings.Contains(string(stats), "generated corpus, 300") {
		t.Errorf("stats table:\n%s", stats)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
