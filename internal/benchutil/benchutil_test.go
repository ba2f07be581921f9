package benchutil

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ragd/ragd/spi"
)

// CPUTime grows while the process computes.
func TestCPUTimeGrows(t *testing.T) {
	t0 := CPUTime()
	x := 0
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
		x++
	}
	if d := CPUTime() - t0; d <= 0 {
		t.Fatalf("CPU time grew by %v after %d iterations of a busy loop", d, x)
	}
}

// The corpus and query readers take what the scale benchmark's files hold,
// stop at the limit, and skip blank texts; EnvInt reads its default and
// a set value.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus.jsonl")
	lines := `{"id": "1", "title": "T1", "text": "one", "vector": [0.5]}
{"id": "2", "text": "two"}
{"id": "3", "text": "three"}
`
	if err := os.WriteFile(corpus, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		limit int
		want  []string
	}{{-1, []string{"1 T1 one", "2  two", "3  three"}}, {2, []string{"1 T1 one", "2  two"}}, {0, nil}} {
		var got []string
		EachDocument(t, corpus, tc.limit, func(d spi.Document) { got = append(got, d.ID+" "+d.Title+" "+d.Text) })
		if !slices.Equal(got, tc.want) {
			t.Fatalf("limit %d: %q, want %q", tc.limit, got, tc.want)
		}
	}
	queries := filepath.Join(dir, "queries.jsonl")
	if err := os.WriteFile(queries, []byte("{\"text\": \"a b\"}\n{\"text\": \"  \"}\n{\"text\": \"c\", \"vector\": [1]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := Texts(t, queries); !slices.Equal(got, []string{"a b", "c"}) {
		t.Fatalf("texts %q", got)
	}
	t.Setenv("RAG_BENCHUTIL_N", "")
	if n := EnvInt(t, "RAG_BENCHUTIL_N", 7); n != 7 {
		t.Fatalf("unset: %d, want 7", n)
	}
	t.Setenv("RAG_BENCHUTIL_N", "12")
	if n := EnvInt(t, "RAG_BENCHUTIL_N", 7); n != 12 {
		t.Fatalf("set: %d, want 12", n)
	}
}
