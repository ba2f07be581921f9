package builtin

import (
	"github.com/ragd/ragd/embedder/builtin/bert"
	"github.com/ragd/ragd/embedder/builtin/modelcache"
	"github.com/ragd/ragd/embedder/builtin/wordpiece"
)

// layout is what the sentence-transformers files of a model directory
// say, as the encoder takes it. modelcache.ReadLayout parses them: one
// parser for the importer and the loader.
type layout struct {
	pooling        bert.Pooling
	poolingName    string
	normalize      bool
	maxSeqLength   int
	lowerCase      bool
	queryPrompt    string
	documentPrompt string
	tokenizer      *wordpiece.Tokenizer
}

func readLayout(dir string) (layout, error) {
	l, err := modelcache.ReadLayout(dir)
	if err != nil {
		return layout{}, err
	}
	pooling := bert.PoolMean
	if l.Pooling == modelcache.PoolCLS {
		pooling = bert.PoolCLS
	}
	return layout{pooling: pooling, poolingName: l.Pooling, normalize: l.Normalize, maxSeqLength: l.MaxSeqLength,
		lowerCase: l.LowerCase, queryPrompt: l.QueryPrompt, documentPrompt: l.DocumentPrompt, tokenizer: l.Tokenizer}, nil
}
