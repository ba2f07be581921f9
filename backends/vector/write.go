package vector

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/ragd/ragd/spi"
)

// copyThreshold is the batch size from which Upsert loads rows with COPY
// into a temporary table instead of a pipelined batch of INSERTs.
const copyThreshold = 64

// Upsert inserts or replaces docs by id, atomically: either every document
// is written or none is. Every document needs an id and a valid vector;
// an invalid document wraps spi.ErrInvalidQuery and nothing is written. When
// ids repeat within docs the last one wins. A document without UpdatedAt is
// stamped with Config.Now.
func (b *Backend) Upsert(ctx context.Context, docs []spi.Document) error {
	rows, err := b.rows(docs)
	if err != nil {
		return fmt.Errorf("vector: upsert: %w", err)
	}
	if len(rows) == 0 {
		return nil
	}
	if len(rows) < copyThreshold {
		// A batch runs in one implicit transaction: all rows or none.
		batch := &pgx.Batch{}
		for _, r := range rows {
			batch.Queue(b.q.upsert, r...)
		}
		return wrapErr(ctx, "upsert", b.pool.SendBatch(ctx, batch).Close())
	}
	err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, b.q.createTemp); err != nil {
			return err
		}
		cols := strings.Split(columns, ", ")
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"ragd_upsert"}, cols, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, b.q.mergeTemp)
		return err
	})
	return wrapErr(ctx, "upsert", err)
}

// rows validates docs and turns them into column values, deduplicated by
// id with the last occurrence winning.
func (b *Backend) rows(docs []spi.Document) ([][]any, error) {
	at := make(map[string]int, len(docs))
	rows := make([][]any, 0, len(docs))
	now := b.cfg.Now().UTC()
	for i := range docs {
		d := &docs[i]
		if err := validateDoc(d); err != nil {
			return nil, err
		}
		if err := b.checkVector(d.Vector); err != nil {
			return nil, fmt.Errorf("document %q: %w", d.ID, err)
		}
		md := d.Metadata
		if md == nil {
			md = map[string]string{}
		}
		updated := d.UpdatedAt
		if updated.IsZero() {
			updated = now
		}
		row := []any{d.ID, d.Tenant, d.Title, d.Text, md, nonNil(d.Entities), nonNil(d.Links),
			pgvector.NewVector(d.Vector), updated}
		if j, ok := at[d.ID]; ok {
			rows[j] = row
			continue
		}
		at[d.ID] = len(rows)
		rows = append(rows, row)
	}
	return rows, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// validateDoc rejects documents PostgreSQL cannot store: an empty id, and
// strings that are not valid UTF-8 or hold NUL bytes.
func validateDoc(d *spi.Document) error {
	if d.ID == "" {
		return fmt.Errorf("%w: document id must not be empty", spi.ErrInvalidQuery)
	}
	check := []string{d.ID, d.Tenant, d.Title, d.Text}
	for k, v := range d.Metadata {
		check = append(check, k, v)
	}
	check = append(check, d.Entities...)
	check = append(check, d.Links...)
	for _, s := range check {
		if !storable(s) {
			return fmt.Errorf("%w: document %q holds invalid UTF-8 or a NUL byte", spi.ErrInvalidQuery, d.ID)
		}
	}
	return nil
}

// storable reports whether PostgreSQL can hold s in a text column: valid
// UTF-8 without NUL bytes.
func storable(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }

// Delete removes documents by id in one statement. Unknown ids (including
// ids no document could have) are ignored.
func (b *Backend) Delete(ctx context.Context, ids []string) error {
	valid := make([]string, 0, len(ids))
	for _, id := range ids {
		if storable(id) {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return nil
	}
	_, err := b.pool.Exec(ctx, b.q.delete, valid)
	return wrapErr(ctx, "delete", err)
}
