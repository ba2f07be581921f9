package keyword_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/blevesearch/bleve/v2/search"

	"github.com/ragd/ragd/backends/keyword"
)

// TestCranfieldTune prints the settings table in docs/keyword.md. BM25 k1
// and b are package variables of bleve (process-wide), so they are varied
// here only, never in the backend.
func TestCranfieldTune(t *testing.T) {
	if os.Getenv("RAG_KEYWORD_TUNE") == "" {
		t.Skip("set RAG_KEYWORD_TUNE=1 to print the tuning table")
	}
	c := loadCranfield(t)
	k1, bb := search.BM25_k1, search.BM25_b
	defer func() { search.BM25_k1, search.BM25_b = k1, bb }()
	for _, an := range []string{"en", "en_snowball", "en_plural", "en_nostem", "standard"} {
		b := openCranfield(t, c, keyword.Config{Analyzer: an})
		for _, bleveStats := range []bool{false, true} {
			for _, boost := range []float64{0.5, 1, 1.5, 2, 3} {
				for _, kb := range [][2]float64{{1.2, 0.75}, {0.9, 0.4}, {1.5, 0.75}, {2.0, 0.75}} {
					search.BM25_k1, search.BM25_b = kb[0], kb[1]
					v := b.WithTitleBoost(boost)
					v.UseBleveStats(bleveStats)
					fmt.Printf("tune analyzer=%s bleve_stats=%v title_boost=%.1f k1=%.1f b=%.2f ndcg10=%.4f\n",
						an, bleveStats, boost, kb[0], kb[1], meanNDCG10(t, v, c))
				}
			}
		}
	}
}
