package keyword_test

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/spi"
)

// cranfieldDir resolves the shared Cranfield data: RAG_CRANFIELD_DIR, else
// ../shared/data/cranfield relative to the repository root.
func cranfieldDir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv("RAG_CRANFIELD_DIR"); d != "" {
		return d
	}
	// this package is backends/keyword, two levels below the repo root
	return filepath.Join("..", "..", "..", "shared", "data", "cranfield")
}

type cranfield struct {
	docs    []spi.Document
	queries []cranQuery               // in file order, only judged queries
	qrels   map[string]map[string]int // query id -> doc id -> grade
}

type cranQuery struct{ ID, Text string }

// loadCranfield reads the BEIR layout or skips the test when it is absent.
func loadCranfield(tb testing.TB) *cranfield {
	tb.Helper()
	dir := cranfieldDir(tb)
	if _, err := os.Stat(filepath.Join(dir, "corpus.jsonl")); err != nil {
		tb.Skipf("cranfield data not found at %s (set RAG_CRANFIELD_DIR): %v", dir, err)
	}
	c := &cranfield{qrels: map[string]map[string]int{}}
	eachJSONL(tb, filepath.Join(dir, "corpus.jsonl"), func(r beirRecord) {
		c.docs = append(c.docs, spi.Document{ID: r.ID, Title: r.Title, Text: r.Text})
	})
	f, err := os.Open(filepath.Join(dir, "qrels", "test.tsv"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 0; sc.Scan(); line++ {
		parts := strings.Split(sc.Text(), "\t")
		if line == 0 || len(parts) != 3 {
			continue // header "query-id corpus-id score"
		}
		grade, err := strconv.Atoi(strings.TrimSpace(parts[2]))
		if err != nil {
			tb.Fatalf("qrels line %d: %v", line+1, err)
		}
		if c.qrels[parts[0]] == nil {
			c.qrels[parts[0]] = map[string]int{}
		}
		c.qrels[parts[0]][parts[1]] = grade
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	eachJSONL(tb, filepath.Join(dir, "queries.jsonl"), func(r beirRecord) {
		if _, judged := c.qrels[r.ID]; judged {
			c.queries = append(c.queries, cranQuery{ID: r.ID, Text: r.Text})
		}
	})
	if len(c.docs) == 0 || len(c.queries) == 0 {
		tb.Fatalf("cranfield at %s: %d docs, %d judged queries", dir, len(c.docs), len(c.queries))
	}
	return c
}

// beirRecord is one line of corpus.jsonl or queries.jsonl.
type beirRecord struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

func eachJSONL(tb testing.TB, path string, fn func(beirRecord)) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m beirRecord
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		fn(m)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
}

// ndcgAt computes nDCG@k the way pytrec_eval (trec_eval's ndcg_cut) does:
// linear gain = the judged grade, discount 1/log2(rank+1); the ideal DCG
// sorts the query's judged grades, counting only positive ones; unjudged
// and non-positive documents gain nothing.
func ndcgAt(ranked []string, judged map[string]int, k int) float64 {
	var dcg float64
	for i, id := range ranked {
		if i == k {
			break
		}
		if g := judged[id]; g > 0 {
			dcg += float64(g) / math.Log2(float64(i+2))
		}
	}
	var grades []int
	for _, g := range judged {
		if g > 0 {
			grades = append(grades, g)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(grades)))
	var idcg float64
	for i, g := range grades {
		if i == k {
			break
		}
		idcg += float64(g) / math.Log2(float64(i+2))
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

// meanNDCG10 runs every judged query against b and averages nDCG@10.
func meanNDCG10(tb testing.TB, b *keyword.Backend, c *cranfield) float64 {
	tb.Helper()
	var sum float64
	for _, q := range c.queries {
		refs, err := b.Retrieve(context.Background(), spi.KeywordRequest{Text: q.Text, K: 10})
		if err != nil {
			tb.Fatalf("query %s: %v", q.ID, err)
		}
		ids := make([]string, len(refs))
		for i, r := range refs {
			ids[i] = r.ID
		}
		sum += ndcgAt(ids, c.qrels[q.ID], 10)
	}
	return sum / float64(len(c.queries))
}

func openCranfield(tb testing.TB, c *cranfield, cfg keyword.Config) *keyword.Backend {
	tb.Helper()
	if cfg.Dir == "" {
		cfg.Dir = tb.TempDir()
	}
	b, err := keyword.Open(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	if err := b.Upsert(context.Background(), c.docs); err != nil {
		tb.Fatal(err)
	}
	return b
}

// The quality floor from the issue: keyword-only nDCG@10 on Cranfield must
// reach what textbook BM25 (k1=1.2, b=0.75, no stemming) scores, 0.355.
func TestCranfieldNDCG(t *testing.T) {
	c := loadCranfield(t)
	b := openCranfield(t, c, keyword.Config{})
	got := meanNDCG10(t, b, c)
	t.Logf("cranfield nDCG@10 = %.4f over %d judged queries (default config)", got, len(c.queries))
	if got < 0.355 {
		t.Fatalf("nDCG@10 = %.4f, want >= 0.355", got)
	}
}
