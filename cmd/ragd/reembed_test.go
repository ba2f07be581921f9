package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	ragdapp "github.com/ragd/ragd/app"
	vectorembedded "github.com/ragd/ragd/backends/vector/embedded"
	"github.com/ragd/ragd/config"
	"github.com/ragd/ragd/internal/testenv"
	"github.com/ragd/ragd/retriever"
	"github.com/ragd/ragd/spi"
)

// paraphrase is a small collection whose queries share no content word
// with the documents they are about: only a semantic embedder finds them.
var paraphrase = struct {
	docs    map[string]string
	queries map[string][2]string // query id → text, relevant document
}{
	docs: map[string]string{
		"tyre":   "How to fix a flat tyre on your automobile with a jack and a spare",
		"bread":  "A recipe for baking sourdough bread at home with a starter",
		"heart":  "Recognising cardiac arrest and giving chest compressions until help arrives",
		"tax":    "Filing your annual income tax return before the deadline",
		"garden": "Growing tomatoes on a sunny balcony in pots",
		"sleep":  "Why teenagers need nine hours of rest every night",
		"guitar": "Tuning a six-string acoustic guitar by ear",
		"moon":   "The Apollo missions that landed astronauts on the Moon",
		"chess":  "Opening principles in chess: control the centre and develop knights",
		"rain":   "Monsoon season brings heavy rainfall to South Asia",
		"bees":   "Honeybee colonies pollinate orchards and produce honey",
		"knots":  "Tying a bowline knot for sailing",
		"coffee": "Roasting coffee beans to a medium brown",
		"paint":  "Choosing a primer before painting interior walls",
		"python": "Writing list comprehensions in the Python programming language",
		"whale":  "Humpback whale songs travel for kilometres under water",
		"piano":  "Practising scales on the piano every morning",
		"bridge": "Suspension bridges hang their deck from steel cables",
		"vote":   "How ballots are counted after a national election",
		"snow":   "Avalanche safety for backcountry skiers",
	},
	queries: map[string][2]string{
		"q1": {"car wheel puncture repair", "tyre"},
		"q2": {"making a loaf in my kitchen", "bread"},
		"q3": {"what to do when someone collapses and stops breathing", "heart"},
		"q4": {"paying the government what I owe on my earnings", "tax"},
		"q5": {"vegetable plants for an apartment", "garden"},
		"q6": {"adolescent slumber needs", "sleep"},
	},
}

func writeParaphrase(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var corpus, queries, qrels strings.Builder
	for id, text := range paraphrase.docs {
		b, _ := json.Marshal(map[string]string{"_id": id, "title": "", "text": text})
		corpus.Write(append(b, '\n'))
	}
	qrels.WriteString("query-id\tcorpus-id\tscore\n")
	for id, q := range paraphrase.queries {
		b, _ := json.Marshal(map[string]string{"_id": id, "text": q[0]})
		queries.Write(append(b, '\n'))
		qrels.WriteString(id + "\t" + q[1] + "\t1\n")
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "qrels"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "corpus.jsonl"), []byte(corpus.String()), 0o644))
	must(os.WriteFile(filepath.Join(dir, "queries.jsonl"), []byte(queries.String()), 0o644))
	must(os.WriteFile(filepath.Join(dir, "qrels", "test.tsv"), []byte(qrels.String()), 0o644))
	return dir
}

func writeConfig(t *testing.T, dataDir, embedder string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rag.yaml")
	cfg := "data_dir: " + strconv.Quote(dataDir) + "\nauth: {enabled: false}\nembedder:\n" + embedder
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// evalTable runs ragd eval and returns MRR@10 per mode.
func evalTable(t *testing.T, args ...string) map[string]float64 {
	t.Helper()
	code, stdout, stderr := runRagd(t, append([]string{"eval"}, args...)...)
	if code != 0 {
		t.Fatalf("ragd eval %v: exit %d\n%s\n%s", args, code, stdout, stderr)
	}
	t.Logf("ragd eval %v:\n%s", args, stdout)
	row := regexp.MustCompile(`(?m)^\| (\w+) \| [0-9.]+ \| [0-9.]+ \| ([0-9.]+) \|`)
	got := map[string]float64{}
	for _, m := range row.FindAllStringSubmatch(stdout, -1) {
		got[m[1]], _ = strconv.ParseFloat(m[2], 64)
	}
	return got
}

// With a real embedding model (e5 through the OpenAI-compatible API, with
// its query and passage roles): the vector source finds paraphrases that
// BM25 and the built-in hashing embedder miss, and hybrid keeps them; a
// store built with the hashing embedder refuses to start with e5 until
// ragd reembed rebuilds its vectors.
func TestRealEmbedderEvalAndReembed(t *testing.T) {
	t.Parallel()
	emb := testenv.Embedder(t)
	url, model, dim := emb.URL, emb.Model, emb.Dimension
	ds := writeParaphrase(t)
	data := t.TempDir()
	hashing := writeConfig(t, data, "  kind: hashing\n  dimension: "+strconv.Itoa(dim)+"\n")
	e5 := writeConfig(t, data, "  kind: openai\n  base_url: "+strconv.Quote(url)+"\n  model: "+strconv.Quote(model)+
		"\n  dimension: "+strconv.Itoa(dim)+"\n  query_input_type: query\n  document_input_type: passage\n"+
		"  timeout_ms: 600000\n  batch_size: 8\n")

	before := evalTable(t, "-c", hashing, "--data-dir", data, "--modes", "keyword,vector,hybrid", ds)

	// The store now records the hashing embedder: e5 must not start on it.
	code, _, stderr := runRagd(t, "eval", "-c", e5, "--data-dir", data, "--modes", "vector", ds)
	if code == 0 || !strings.Contains(stderr, "ragd reembed") || !strings.Contains(stderr, "kind=hashing") {
		t.Fatalf("eval with e5 on a hashing store: exit %d, want a failure naming both embedders and ragd reembed:\n%s", code, stderr)
	}
	code, stdout, stderr := runRagd(t, "reembed", "-c", e5)
	if code != 0 || !strings.Contains(stdout, strconv.Itoa(len(paraphrase.docs))+" documents re-embedded") {
		t.Fatalf("ragd reembed: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// The re-embedded store starts with e5 and answers paraphrases.
	cfg, err := config.Load(e5)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := ragdapp.New(context.Background(), cfg, ragdapp.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("start with e5 after reembed: %v", err)
	}
	found := 0
	for _, q := range paraphrase.queries {
		res, err := inst.Retriever.Retrieve(context.Background(), retriever.Query{Text: q[0], Limit: 1, Sources: retriever.Only(spi.SourceVector)})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 1 && res.Hits[0].ID == q[1] {
			found++
		}
	}
	inst.Close()
	if found < len(paraphrase.queries)-1 {
		t.Errorf("after reembed, e5 put the paraphrased document first for %d of %d queries", found, len(paraphrase.queries))
	}
	// Back to the hashing embedder: refused the same way.
	_, err = ragdapp.New(context.Background(), mustLoad(t, hashing), ragdapp.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var ec *vectorembedded.EmbedderChangedError
	if !errors.As(err, &ec) {
		t.Fatalf("hashing on an e5 store: %v, want *EmbedderChangedError", err)
	}

	after := evalTable(t, "-c", e5, "--data-dir", t.TempDir(), "--modes", "keyword,vector,hybrid", ds)
	if after["vector"] < before["vector"]+0.3 || after["vector"] < 0.7 {
		t.Errorf("vector MRR@10: e5 %.4f, hashing %.4f; want e5 >= 0.7 and well above hashing", after["vector"], before["vector"])
	}
	if after["hybrid"] < after["keyword"]+0.2 {
		t.Errorf("hybrid MRR@10 %.4f with e5 does not add the paraphrases to keyword's %.4f", after["hybrid"], after["keyword"])
	}
}

func mustLoad(t *testing.T, path string) *config.Config {
	t.Helper()
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
