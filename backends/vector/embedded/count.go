package embedded

import (
	"context"

	"github.com/ragd/ragd/spi"
)

var _ spi.DocCounter = (*Store)(nil)

// DocCount is Len: the documents in the in-memory index, every tenant's.
func (s *Store) DocCount(ctx context.Context) (int, error) {
	if err := s.checkOpen(ctx, "doc count"); err != nil {
		return 0, err
	}
	return s.Len(), nil
}
