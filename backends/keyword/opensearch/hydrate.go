package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/ragd/ragd/spi"
)

// source is a tenant document as stored (schema.go).
type source struct {
	ID        string       `json:"id"`
	Tenant    string       `json:"tenant"`
	Title     string       `json:"title"`
	Text      string       `json:"text"`
	Meta      []string     `json:"meta,omitempty"`
	Metadata  spi.Metadata `json:"metadata,omitempty"`
	UpdatedAt string       `json:"updated_at,omitempty"`
}

func toSource(d spi.Document) source {
	s := source{ID: d.ID, Tenant: d.Tenant, Title: d.Title, Text: d.Text}
	if len(d.Metadata) > 0 {
		s.Meta, s.Metadata = metaTerms(d.Metadata), d.Metadata
	}
	if !d.UpdatedAt.IsZero() {
		s.UpdatedAt = d.UpdatedAt.UTC().Format(time.RFC3339Nano)
	}
	return s
}

func (s source) document() (spi.Document, error) {
	d := spi.Document{ID: s.ID, Tenant: s.Tenant, Title: s.Title, Text: s.Text, Metadata: s.Metadata}
	if s.UpdatedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, s.UpdatedAt)
		if err != nil {
			return d, fmt.Errorf("%w: document %q: updated_at: %v", spi.ErrUnavailable, s.ID, err)
		}
		d.UpdatedAt = t
	}
	return d, nil
}

// Hydrate returns the stored documents for ids in the order of ids, each
// once, and the ids the index does not hold in missing, as of the last
// refresh (what searches see). Vector, Entities and Links are always
// empty: the keyword index does not keep them.
func (b *Backend) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	if err := b.live(); err != nil {
		return nil, nil, err
	}
	uniq := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	found, err := b.lookup(ctx, uniq, true)
	if err != nil {
		return nil, nil, fmt.Errorf("keyword/opensearch: hydrate: %w", err)
	}
	var docs []spi.Document
	var missing []string
	for _, id := range uniq {
		h, ok := found[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		d, err := h.Source.document()
		if err != nil {
			return nil, nil, fmt.Errorf("keyword/opensearch: hydrate: %w", err)
		}
		docs = append(docs, d)
	}
	return docs, missing, nil
}

// hit is one document found by lookup.
type hit struct {
	Index   string `json:"_index"`
	Version int64  `json:"_version"`
	Source  source `json:"_source"`
}

// lookup finds ids in the tenant indexes (one search). Should an id be in
// two indexes (two replicas moved it between tenants at once), the higher
// version wins. withSource reads the documents too.
func (b *Backend) lookup(ctx context.Context, ids []string, withSource bool) (map[string]hit, error) {
	body := map[string]any{
		"size":             min(2*len(ids), maxWindow), // an id may be in two indexes
		"query":            map[string]any{"terms": map[string]any{"id": ids}},
		"version":          true,
		"track_total_hits": false,
	}
	if !withSource {
		body["_source"] = []string{"id", "tenant"}
	}
	params := searchParams()
	params.Set("allow_partial_search_results", "false")
	r, err := b.c.do(ctx, http.MethodPost, "/"+b.n.tenantPattern()+"/_search", params, body)
	if err != nil {
		return nil, err
	}
	if r.status != http.StatusOK {
		return nil, failure(r)
	}
	var res struct {
		TimedOut bool `json:"timed_out"`
		Shards   struct {
			Failed int `json:"failed"`
		} `json:"_shards"`
		Hits struct {
			Hits []hit `json:"hits"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil {
		return nil, fmt.Errorf("%w: unreadable answer: %v", spi.ErrUnavailable, err)
	}
	if res.TimedOut || res.Shards.Failed > 0 {
		return nil, fmt.Errorf("%w: partial answer", spi.ErrUnavailable)
	}
	out := make(map[string]hit, len(res.Hits.Hits))
	for _, h := range res.Hits.Hits {
		if old, ok := out[h.Source.ID]; !ok || h.Version > old.Version {
			out[h.Source.ID] = h
		}
	}
	return out, nil
}
