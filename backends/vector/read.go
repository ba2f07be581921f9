package vector

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/ragd/ragd/spi"
)

// Hydrate returns the stored documents for ids in the order of ids (each id
// once), with the ids that do not exist in missing. Documents carry their
// vector, entities and links.
func (b *Backend) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	uniq := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	var query []string // the ids PostgreSQL can hold at all
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
			if storable(id) {
				query = append(query, id)
			}
		}
	}
	if len(uniq) == 0 {
		return nil, nil, nil
	}
	rows, err := b.pool.Query(ctx, b.q.hydrate, query)
	if err != nil {
		return nil, nil, wrapErr(ctx, "hydrate", err)
	}
	found := make(map[string]spi.Document, len(uniq))
	for rows.Next() {
		d, err := scanDoc(rows)
		if err != nil {
			rows.Close()
			return nil, nil, wrapErr(ctx, "hydrate", err)
		}
		found[d.ID] = d
	}
	if err := rows.Err(); err != nil {
		return nil, nil, wrapErr(ctx, "hydrate", err)
	}
	docs := make([]spi.Document, 0, len(found))
	var missing []string
	for _, id := range uniq {
		if d, ok := found[id]; ok {
			docs = append(docs, d)
		} else {
			missing = append(missing, id)
		}
	}
	return docs, missing, nil
}

// Scan visits every document in ascending id order (byte order: the id
// column uses the "C" collation), reading Config.ScanPageSize rows per
// query. Each page is its own snapshot: documents written during a scan may
// or may not be visited. An error from fn stops the scan and is returned
// as is.
func (b *Backend) Scan(ctx context.Context, fn func(spi.Document) error) error {
	after := ""
	for {
		page, err := b.scanPage(ctx, after)
		if err != nil {
			return err
		}
		for _, d := range page {
			if err := fn(d); err != nil {
				return err
			}
		}
		if len(page) < b.cfg.ScanPageSize {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

func (b *Backend) scanPage(ctx context.Context, after string) ([]spi.Document, error) {
	rows, err := b.pool.Query(ctx, b.q.scan, after, b.cfg.ScanPageSize)
	if err != nil {
		return nil, wrapErr(ctx, "scan", err)
	}
	defer rows.Close()
	page := make([]spi.Document, 0, b.cfg.ScanPageSize)
	for rows.Next() {
		d, err := scanDoc(rows)
		if err != nil {
			return nil, wrapErr(ctx, "scan", err)
		}
		page = append(page, d)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr(ctx, "scan", err)
	}
	return page, nil
}

// scanDoc reads one row selected with the columns list, followed by extra
// columns scanned into extra.
func scanDoc(rows pgx.Rows, extra ...any) (spi.Document, error) {
	var d spi.Document
	var vec *pgvector.Vector // NULL where the query leaves the vector out
	dest := append([]any{&d.ID, &d.Tenant, &d.Title, &d.Text, &d.Metadata, &d.Entities, &d.Links, &vec, &d.UpdatedAt}, extra...)
	if err := rows.Scan(dest...); err != nil {
		return d, fmt.Errorf("read row: %w", err)
	}
	if vec != nil {
		d.Vector = vec.Slice()
	}
	d.UpdatedAt = d.UpdatedAt.UTC()
	if len(d.Metadata) == 0 {
		d.Metadata = nil
	}
	if len(d.Entities) == 0 {
		d.Entities = nil
	}
	if len(d.Links) == 0 {
		d.Links = nil
	}
	return d, nil
}
