package embedded

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/ragd/ragd/spi"
)

var _ spi.DocCounter = (*Store)(nil)

// DocCount counts the stored documents, every tenant's. It walks the
// documents bucket's pages: callers cache it.
func (s *Store) DocCount(ctx context.Context) (int, error) {
	n := 0
	err := s.view(ctx, "doc count", func(tx *bolt.Tx) error {
		n = tx.Bucket(bDocs).Stats().KeyN
		return nil
	})
	return n, err
}
