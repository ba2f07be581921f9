package embedded

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ragd/ragd/internal/benchutil"
	"github.com/ragd/ragd/spi"
)

// BenchmarkDiskPerDocument writes RAG_BENCH_DISK_N documents (20,000 by
// default) of 384 dimensions with 100–200 words of text (vocabulary),
// in batches of
// 500, with ids in ascending and in random order, and reports the bytes
// per document of the pages the buckets use, of the bbolt file (which
// bbolt grows 16 MiB at a time) and of the vectors file.
func BenchmarkDiskPerDocument(b *testing.B) {
	n := benchutil.EnvInt(b, "RAG_BENCH_DISK_N", 20_000)
	for _, order := range []string{"ascending", "random"} {
		b.Run(order, func(b *testing.B) {
			for b.Loop() {
				dir := b.TempDir()
				s, err := Open(context.Background(), Config{Dir: dir, Dimension: 384, NoSync: true, ANN: ANN{MinRows: -1}})
				if err != nil {
					b.Fatal(err)
				}
				r := rand.New(rand.NewPCG(1, 1))
				vocab := newVocabulary(r)
				perm := r.Perm(n)
				batch := []spi.Document{}
				for i := range n {
					id := i
					if order == "random" {
						id = perm[i]
					}
					v := make([]float32, 384)
					for j := range v {
						v[j] = float32(r.NormFloat64())
					}
					batch = append(batch, spi.Document{ID: fmt.Sprintf("doc-%07d", id), Tenant: "t1", Metadata: spi.Metadata{"lang": spi.String("en")},
						Title: prose(vocab, 5), Text: prose(vocab, 100+r.IntN(100)), Vector: v})
					if len(batch) == 500 || i == n-1 {
						if err := s.Upsert(context.Background(), batch); err != nil {
							b.Fatal(err)
						}
						batch = batch[:0]
					}
				}
				var pages int
				_ = s.db.View(func(tx *bolt.Tx) error {
					for _, name := range [][]byte{bucketDocs, bucketVersions, bucketLog} {
						st := tx.Bucket(name).Stats()
						pages += st.LeafAlloc + st.BranchAlloc
					}
					return nil
				})
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				db, _ := os.Stat(filepath.Join(dir, FileName))
				vec, _ := os.Stat(filepath.Join(dir, VectorFileName))
				b.ReportMetric(float64(pages)/float64(n), "pages-B/doc")
				b.ReportMetric(float64(db.Size())/float64(n), "db-B/doc")
				b.ReportMetric(float64(vec.Size())/float64(n), "vec-B/doc")
			}
		})
	}
}

// vocabulary is words of 2–10 letters drawn with Zipf's law, the way
// words of prose are: text that compresses about as prose does.
type vocabulary struct {
	words []string
	zipf  *rand.Zipf
}

func newVocabulary(r *rand.Rand) vocabulary {
	words := make([]string, 5000)
	for i := range words {
		b := make([]byte, 2+r.IntN(9))
		for j := range b {
			b[j] = byte('a' + r.IntN(26))
		}
		words[i] = string(b)
	}
	return vocabulary{words: words, zipf: rand.NewZipf(r, 1.1, 2, uint64(len(words)-1))}
}

// prose is n words of the vocabulary.
func prose(v vocabulary, n int) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(v.words[v.zipf.Uint64()])
	}
	return sb.String()
}
