package eval_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragd/ragd/eval"
	"github.com/ragd/ragd/spi/spitest"
)

func writeDataset(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const (
	tinyCorpus = `{"_id": "d1", "title": "wing", "text": "wing in a slipstream"}
{"_id": "d2", "title": "plate", "text": "flat plate boundary layer"}
{"_id": "d3", "title": "heat", "text": "heat conduction in slabs"}
`
	tinyQueries = `{"_id": "q1", "text": "slipstream wing"}
{"_id": "q2", "text": "boundary layer"}
{"_id": "q3", "text": "never judged"}
`
	tinyQrels = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td2\t1\nq2\td9\t1\nq4\td3\t1\n"
)

func TestLoadBEIR(t *testing.T) {
	dir := writeDataset(t, map[string]string{
		"corpus.jsonl":   tinyCorpus,
		"queries.jsonl":  tinyQueries,
		"qrels/test.tsv": tinyQrels,
	})
	ds, err := eval.LoadBEIR(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if ds.Name != "tiny" || len(ds.Corpus) != 3 || ds.Corpus[1].Title != "plate" {
		t.Fatalf("dataset = %+v", ds)
	}
	// q3 has no judgments, q4 has no text: only q1 and q2 are evaluated.
	if len(ds.Queries) != 2 || ds.Queries[0] != (eval.Query{ID: "q1", Text: "slipstream wing"}) || ds.Queries[1].ID != "q2" {
		t.Fatalf("queries = %+v", ds.Queries)
	}
	if ds.Qrels["q2"]["d2"] != 1 || ds.Qrels["q1"]["d1"] != 2 {
		t.Fatalf("qrels = %v", ds.Qrels)
	}
	notes := strings.Join(ds.Notes, "\n")
	if !strings.Contains(notes, "1 judgments name documents missing") {
		t.Errorf("notes lack the unknown documents: %q", notes)
	}
	if !strings.Contains(notes, "1 judged queries are missing") {
		t.Errorf("notes lack the unknown query: %q", notes)
	}
}

func TestLoadBEIRErrors(t *testing.T) {
	cases := map[string]map[string]string{
		"no qrels":      {"corpus.jsonl": tinyCorpus, "queries.jsonl": tinyQueries},
		"no corpus":     {"queries.jsonl": tinyQueries, "qrels/test.tsv": tinyQrels},
		"bad corpus":    {"corpus.jsonl": "{\"_id\": \"d1\"}\nnot json\n", "queries.jsonl": tinyQueries, "qrels/test.tsv": tinyQrels},
		"bad score":     {"corpus.jsonl": tinyCorpus, "queries.jsonl": tinyQueries, "qrels/test.tsv": "q1\td1\t2\nq1\td2\thigh\n"},
		"no overlap":    {"corpus.jsonl": tinyCorpus, "queries.jsonl": tinyQueries, "qrels/test.tsv": "q9\td1\t1\n"},
		"bad qrel line": {"corpus.jsonl": tinyCorpus, "queries.jsonl": tinyQueries, "qrels/test.tsv": "q1\td1\n"},
	}
	for name, files := range cases {
		dir := writeDataset(t, files)
		_, err := eval.LoadBEIR(dir, "test")
		if !errors.Is(err, eval.ErrDataset) {
			t.Errorf("%s: err = %v, want ErrDataset", name, err)
		}
	}
	dir := writeDataset(t, map[string]string{"corpus.jsonl": "{\"_id\": \"d1\"}\nnot json\n", "queries.jsonl": tinyQueries, "qrels/test.tsv": tinyQrels})
	if _, err := eval.LoadBEIR(dir, "test"); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("corpus error must name the line: %v", err)
	}
	dir = writeDataset(t, map[string]string{"corpus.jsonl": tinyCorpus, "queries.jsonl": tinyQueries, "qrels/test.tsv": "q1\td1\t2\nq1\td2\thigh\n"})
	if _, err := eval.LoadBEIR(dir, "test"); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("qrels error must name the line: %v", err)
	}
}

func TestReadQrelsTRECFormat(t *testing.T) {
	q, err := eval.ReadQrels(strings.NewReader("1 0 d1 2\n1 0 d2 0\n2 0 d3 -1\n\n1 0 d1 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if q["1"]["d1"] != 3 || q["1"]["d2"] != 0 || q["2"]["d3"] != -1 || len(q) != 2 {
		t.Fatalf("qrels = %v", q)
	}
}

func TestWriteRun(t *testing.T) {
	var b bytes.Buffer
	if err := eval.WriteRun(&b, map[string][]string{"q2": {"x"}, "q1": {"a", "b"}}, "ragd"); err != nil {
		t.Fatal(err)
	}
	want := "q1 Q0 a 1 1.000000 ragd\nq1 Q0 b 2 0.500000 ragd\nq2 Q0 x 1 1.000000 ragd\n"
	if b.String() != want {
		t.Fatalf("run =\n%s\nwant\n%s", b.String(), want)
	}
}

func TestLoadCranfield(t *testing.T) {
	ds, err := eval.LoadBEIR(spitest.CranfieldDir(t), "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Corpus) != 1400 || len(ds.Queries) != 225 {
		t.Fatalf("cranfield: %d docs, %d queries; want 1400 and 225", len(ds.Corpus), len(ds.Queries))
	}
}
