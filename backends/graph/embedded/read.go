package embedded

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/ragd/ragd/backends/graph/graphspec"
	"github.com/ragd/ragd/spi"
)

// Hydrate returns the stored documents for ids in the order of ids (each
// once) with their normalised entities and link targets, both sorted, and
// the ids that do not exist in missing.
func (s *Store) Hydrate(ctx context.Context, ids []string) ([]spi.Document, []string, error) {
	ids = graphspec.Dedupe(ids)
	var docs []spi.Document
	var missing []string
	err := s.view(ctx, "hydrate", func(tx *bolt.Tx) error {
		docsB, docEnt, out := tx.Bucket(bDocs), tx.Bucket(bDocEnt), tx.Bucket(bLinkOut)
		for _, id := range ids {
			v := docsB.Get([]byte(id))
			if v == nil {
				missing = append(missing, id)
				continue
			}
			r, err := decodeRecord(v)
			if err != nil {
				return err
			}
			docs = append(docs, spi.Document{
				ID: id, Tenant: r.Tenant, Title: r.Title, Text: r.Text, Metadata: r.Metadata, UpdatedAt: r.UpdatedAt,
				Entities: seconds(docEnt, id), Links: seconds(out, id),
			})
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return docs, missing, nil
}

// Expand returns documents related to seeds, ranked by the rule documented
// in package graphspec: hop distance ascending, then distinct connecting
// paths descending, then id; Ref.Score = graphspec.ExpandScore. Documents
// failing opts.Filter are left out before the Limit cut but still connect
// the documents beyond them. Hops outside 1..2, Limit < 1 or an invalid
// filter wrap spi.ErrInvalidQuery; no seeds returns spi.ErrNothingToSearch.
// It reads the in-memory read model only.
func (s *Store) Expand(ctx context.Context, seeds []string, opts spi.ExpandOptions) ([]spi.Ref, error) {
	if err := CheckExpand(seeds, opts); err != nil {
		return nil, err
	}
	if err := s.readable(ctx, "expand"); err != nil {
		return nil, err
	}
	s.mem.mu.RLock()
	defer s.mem.mu.RUnlock()
	v := newView(s.mem, opts.Tenant, opts.Filter, s.maxDegree)
	refs, err := v.expand(ctx, graphspec.Dedupe(seeds), opts)
	if err != nil {
		return nil, fmt.Errorf("graph/embedded: expand: %w", err)
	}
	return refs, nil
}

// MatchEntities matches req.Text against entity names and ranks the
// documents that mention the matches (rule in package graphspec: the sum of
// matched entities' weights, a weight being the number of distinct query
// tokens among the entity's terms). Syntax queries wrap spi.ErrUnsupported;
// a text with no word to match returns spi.ErrNothingToSearch without
// reading the model. It reads the in-memory read model only.
func (s *Store) MatchEntities(ctx context.Context, req spi.KeywordRequest) ([]spi.Ref, error) {
	tokens, err := checkMatch(req)
	if err != nil {
		return nil, err
	}
	if err := s.readable(ctx, "match entities"); err != nil {
		return nil, err
	}
	s.mem.mu.RLock()
	defer s.mem.mu.RUnlock()
	v := newView(s.mem, req.Tenant, req.Filter, s.maxDegree)
	refs, err := v.matchEntities(ctx, tokens, s.maxEntities, req.K)
	if err != nil {
		return nil, fmt.Errorf("graph/embedded: match entities: %w", err)
	}
	return refs, nil
}

// CheckExpand returns the error Expand answers for seeds and opts without
// reading anything (invalid options, no seeds), or nil.
func CheckExpand(seeds []string, opts spi.ExpandOptions) error {
	if err := graphspec.ValidateExpand(opts); err != nil {
		return fmt.Errorf("graph/embedded: expand: %w", err)
	}
	if len(seeds) == 0 {
		return fmt.Errorf("graph/embedded: expand: %w: no seeds", spi.ErrNothingToSearch)
	}
	return nil
}

// CheckMatch returns the error MatchEntities answers for req without
// reading anything (an invalid request, query syntax, no word to match),
// or nil.
func CheckMatch(req spi.KeywordRequest) error {
	_, err := checkMatch(req)
	return err
}

func checkMatch(req spi.KeywordRequest) ([]string, error) {
	tokens, err := graphspec.ValidateMatch(req)
	if err != nil {
		return nil, fmt.Errorf("graph/embedded: match entities: %w", err)
	}
	if req.Syntax {
		return nil, fmt.Errorf("graph/embedded: match entities: %w: no query syntax in the embedded graph store", spi.ErrUnsupported)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("graph/embedded: match entities: %w: no word to match", spi.ErrNothingToSearch)
	}
	return tokens, nil
}

// readable is the read model's admission: ctx live and the store open.
func (s *Store) readable(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("graph/embedded: %s: %w", op, err)
	}
	if s.closed.Load() {
		return fmt.Errorf("graph/embedded: %s: %w: store closed", op, spi.ErrUnavailable)
	}
	return nil
}
