package benchutil

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ragd/ragd/ingest/corpus"
	"github.com/ragd/ragd/spi"
)

// EnvInt is the integer in the environment variable name, def when it is
// unset; a value that is not an integer fails tb.
func EnvInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return n
}

// EachDocument calls fn with the first limit documents (all when limit <
// 0) of a JSONL corpus (the scale benchmark's synth-N.jsonl), read as
// `ragd ingest` reads it, without keeping them.
func EachDocument(tb testing.TB, path string, limit int, fn func(spi.Document)) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	for line, err := range corpus.ReadDocuments(f, corpus.FormatJSONL) {
		if limit == 0 {
			return
		}
		if err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		limit--
		fn(line.Doc)
	}
}

// Texts returns the non-blank "text" of each line of a JSONL file (the
// queries scripts/bench.sh scale sends, e.g. queries-mixed.jsonl in its
// BENCH_CACHE; other fields are ignored); a file without one fails tb.
func Texts(tb testing.TB, path string) []string {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var texts []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var q struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		if strings.TrimSpace(q.Text) != "" {
			texts = append(texts, q.Text)
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	if len(texts) == 0 {
		tb.Fatalf("%s: no texts", path)
	}
	return texts
}
