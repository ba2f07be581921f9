package eval

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ragd/ragd/ingest/corpus"
	"github.com/ragd/ragd/spi"
)

// ErrDataset is wrapped by every dataset loading error.
var ErrDataset = errors.New("eval: bad dataset")

// Query is one test query.
type Query struct {
	ID   string
	Text string
}

// Dataset is a BEIR-layout test collection.
type Dataset struct {
	// Name is the directory's base name.
	Name   string
	Corpus []spi.Document
	// Queries are the queries that have judgments, in queries.jsonl order.
	Queries []Query
	// Qrels maps query id → judgments.
	Qrels map[string]Judgments
	// Notes lists what the loader skipped (judgments of unknown queries or
	// documents), for the report.
	Notes []string
}

// LoadBEIR reads DIR/corpus.jsonl, DIR/queries.jsonl and DIR/qrels/SPLIT.tsv
// (split defaults to "test"). The qrels file is tab-separated
// "query-id corpus-id score" with an optional header line.
//
// Evaluated queries: every query with at least one judgment (of any grade)
// whose text is in queries.jsonl. Queries without judgments are dropped, as
// pytrec_eval ignores run entries absent from the qrels.
func LoadBEIR(dir, split string) (*Dataset, error) {
	if split == "" {
		split = "test"
	}
	ds := &Dataset{Name: filepath.Base(filepath.Clean(dir))}
	var err error
	if ds.Corpus, err = loadCorpus(filepath.Join(dir, "corpus.jsonl")); err != nil {
		return nil, err
	}
	queries, err := loadQueries(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		return nil, err
	}
	qrelsPath := filepath.Join(dir, "qrels", split+".tsv")
	f, err := os.Open(qrelsPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDataset, err)
	}
	defer f.Close()
	if ds.Qrels, err = ReadQrels(f); err != nil {
		return nil, fmt.Errorf("%s: %w", qrelsPath, err)
	}
	docs := make(map[string]bool, len(ds.Corpus))
	for _, d := range ds.Corpus {
		docs[d.ID] = true
	}
	unknownDocs := 0
	for _, j := range ds.Qrels {
		for id := range j {
			if !docs[id] {
				unknownDocs++
			}
		}
	}
	if unknownDocs > 0 {
		ds.Notes = append(ds.Notes, fmt.Sprintf("%d judgments name documents missing from the corpus (they count as relevant-but-unretrievable)", unknownDocs))
	}
	have := map[string]bool{}
	for _, q := range queries {
		if _, ok := ds.Qrels[q.ID]; ok && !have[q.ID] {
			have[q.ID] = true
			ds.Queries = append(ds.Queries, q)
		}
	}
	if n := len(ds.Qrels) - len(ds.Queries); n > 0 {
		ds.Notes = append(ds.Notes, fmt.Sprintf("%d judged queries are missing from queries.jsonl and are skipped", n))
	}
	if len(ds.Queries) == 0 {
		return nil, fmt.Errorf("%w: no query of %s has judgments in %s", ErrDataset, dir, qrelsPath)
	}
	return ds, nil
}

func loadCorpus(path string) ([]spi.Document, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDataset, err)
	}
	defer f.Close()
	var docs []spi.Document
	for line, err := range corpus.ReadDocuments(f, corpus.FormatBEIR) {
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrDataset, path, err)
		}
		docs = append(docs, line.Doc)
	}
	return docs, nil
}

func loadQueries(path string) ([]Query, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDataset, err)
	}
	defer f.Close()
	var qs []Query
	// A BEIR query line has the corpus shape ({"_id", "text", "metadata"}).
	for line, err := range corpus.ReadDocuments(f, corpus.FormatBEIR) {
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrDataset, path, err)
		}
		if line.Doc.ID == "" {
			return nil, fmt.Errorf("%w: %s: line %d: query without _id", ErrDataset, path, line.Number)
		}
		qs = append(qs, Query{ID: line.Doc.ID, Text: line.Doc.Text})
	}
	return qs, nil
}

// ReadQrels parses BEIR/TREC-style judgments: one "query-id corpus-id
// score" per line, tab-separated (BEIR) or in the four-column TREC form
// "qid 0 docid rel" separated by spaces. A first line whose score is not an
// integer is a header and is skipped. A repeated pair keeps the last grade.
func ReadQrels(r io.Reader) (map[string]Judgments, error) {
	out := map[string]Judgments{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var fields []string
		if strings.Contains(text, "\t") {
			fields = strings.Split(text, "\t")
		} else {
			fields = strings.Fields(text)
		}
		if len(fields) == 4 { // TREC: qid iter docid rel
			fields = []string{fields[0], fields[2], fields[3]}
		}
		if len(fields) != 3 {
			return nil, fmt.Errorf("%w: qrels line %d: want 3 tab-separated fields, got %d", ErrDataset, n, len(fields))
		}
		grade, err := strconv.Atoi(strings.TrimSpace(fields[2]))
		if err != nil {
			if n == 1 {
				continue // header, e.g. "query-id corpus-id score"
			}
			return nil, fmt.Errorf("%w: qrels line %d: score %q is not an integer", ErrDataset, n, fields[2])
		}
		q, d := strings.TrimSpace(fields[0]), strings.TrimSpace(fields[1])
		if q == "" || d == "" {
			return nil, fmt.Errorf("%w: qrels line %d: empty query or document id", ErrDataset, n)
		}
		if out[q] == nil {
			out[q] = Judgments{}
		}
		out[q][d] = grade
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: qrels after line %d: %v", ErrDataset, n, err)
	}
	return out, nil
}

// WriteRun writes rankings in the TREC run format ("qid Q0 docid rank score
// tag"), with score = 1/rank so that tools which re-sort by score (trec_eval,
// pytrec_eval) keep the given order.
func WriteRun(w io.Writer, runs map[string][]string, tag string) error {
	bw := bufio.NewWriter(w)
	qids := make([]string, 0, len(runs))
	for q := range runs {
		qids = append(qids, q)
	}
	slices.Sort(qids)
	for _, q := range qids {
		for i, id := range runs[q] {
			if _, err := fmt.Fprintf(bw, "%s Q0 %s %d %.6f %s\n", q, id, i+1, 1/float64(i+1), tag); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}
