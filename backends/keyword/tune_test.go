package keyword_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/eval"
)

// TestCranfieldTune prints the settings table in docs/keyword.md: nDCG@10
// on all of Cranfield's queries, on the tune half and on the test half
// (eval.QueryHalf).
func TestCranfieldTune(t *testing.T) {
	if os.Getenv("RAG_KEYWORD_TUNE") == "" {
		t.Skip("set RAG_KEYWORD_TUNE=1 to print the tuning table")
	}
	c := loadCranfield(t)
	tune, test := c.Split(eval.TuneHalf), c.Split(eval.TestHalf)
	for _, an := range []string{"en", "en_snowball", "en_nostem", "standard"} {
		b := openCranfield(t, c, keyword.Config{Analyzer: an})
		for _, boost := range []float64{0.5, 1, 1.5, 2, 3} {
			for _, kb := range [][2]float64{{1.2, 0.75}, {0.9, 0.4}, {1.5, 0.75}, {2.0, 0.75}} {
				v := b.WithScoring(boost, kb[0], kb[1])
				fmt.Printf("tune analyzer=%s title_boost=%.1f k1=%.1f b=%.2f ndcg10 all=%.4f tune=%.4f test=%.4f\n",
					an, boost, kb[0], kb[1], meanNDCG10(t, v, c), meanNDCG10(t, v, tune), meanNDCG10(t, v, test))
			}
		}
	}
}
