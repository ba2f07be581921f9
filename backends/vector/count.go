package vector

import (
	"context"
	"fmt"

	"github.com/ragd/ragd/spi"
)

var _ spi.DocCounter = (*Backend)(nil)

// DocCount counts the table's rows (every tenant's documents; a delete
// removes its row). It reads the whole table: callers cache it.
func (b *Backend) DocCount(ctx context.Context) (int, error) {
	var n int64
	if err := b.pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s`, b.table)).Scan(&n); err != nil {
		return 0, wrapErr(ctx, "doc count", err)
	}
	return int(n), nil
}
