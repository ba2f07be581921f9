package graph

import (
	"context"

	"github.com/ragd/ragd/spi"
)

var _ spi.DocCounter = (*Backend)(nil)

// DocCount counts the Document nodes that are documents (not the stubs
// links to unknown ids leave), of every tenant.
func (b *Backend) DocCount(ctx context.Context) (int, error) {
	var n int64
	err := b.read(ctx, "doc count", func(r runner) error {
		recs, err := run(ctx, r, `MATCH (d:Document) WHERE d.stub IS NULL RETURN count(d) AS n`, nil)
		if err != nil {
			return err
		}
		if len(recs) == 1 {
			v, _ := recs[0].Get("n")
			n, _ = v.(int64)
		}
		return nil
	})
	return int(n), err
}
