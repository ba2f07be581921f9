package vector

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ragd/ragd/spi"
)

// Upsert inserts or replaces docs by id, atomically: either every document
// is written or none is. It is Commit of upserts without a tenant scope,
// so the change log records them. Every document needs an id and a valid
// vector; an invalid document wraps spi.ErrInvalidQuery and nothing is
// written. When ids repeat within docs the last one wins. A document
// without UpdatedAt is stamped with Config.Now.
func (b *Backend) Upsert(ctx context.Context, docs []spi.Document) error {
	at := make(map[string]int, len(docs))
	writes := make([]spi.Write, 0, len(docs))
	for i := range docs {
		d := docs[i]
		if err := validateDoc(&d); err != nil {
			return fmt.Errorf("vector: upsert: %w", err)
		}
		if err := b.checkVector(d.Vector); err != nil {
			return fmt.Errorf("vector: upsert: document %q: %w", d.ID, err)
		}
		w := spi.Write{Op: spi.OpUpsert, Doc: d}
		if j, ok := at[d.ID]; ok {
			writes[j] = w
			continue
		}
		at[d.ID] = len(writes)
		writes = append(writes, w)
	}
	if len(writes) == 0 {
		return nil
	}
	out, err := b.Commit(ctx, writes)
	if err != nil {
		return fmt.Errorf("vector: upsert: %w", err)
	}
	for _, o := range out {
		if o.Err != nil {
			return fmt.Errorf("vector: upsert: %w", o.Err)
		}
	}
	return nil
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
	if err := d.Metadata.Validate(); err != nil {
		return fmt.Errorf("%w: document %q: %v", spi.ErrInvalidQuery, d.ID, err)
	}
	for k, v := range d.Metadata {
		check = append(check, k)
		for _, it := range v.Scalars() {
			if it.Kind() == spi.KindString {
				check = append(check, it.Str())
			}
		}
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

// Delete removes documents by id in one transaction, through Commit, so
// the change log records it. Unknown ids (including ids no document could
// have) are ignored.
func (b *Backend) Delete(ctx context.Context, ids []string) error {
	seen := make(map[string]bool, len(ids))
	writes := make([]spi.Write, 0, len(ids))
	for _, id := range ids {
		if storable(id) && id != "" && !seen[id] {
			seen[id] = true
			writes = append(writes, spi.Write{Op: spi.OpDelete, Doc: spi.Document{ID: id}})
		}
	}
	if len(writes) == 0 {
		return nil
	}
	if _, err := b.Commit(ctx, writes); err != nil {
		return fmt.Errorf("vector: delete: %w", err)
	}
	return nil
}
