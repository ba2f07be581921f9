package keyword_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ragd/ragd/backends/keyword"
	"github.com/ragd/ragd/spi"
)

// sliceScanner is the system of record for rebuild tests: Scan visits the
// documents in id order, honours ctx and stops on fn's error. onDoc, when
// set, runs before each document is handed over (to pause a rebuild).
type sliceScanner struct {
	docs  []spi.Document
	onDoc func(i int)
}

var _ spi.Scanner = (*sliceScanner)(nil)

func (s *sliceScanner) Scan(ctx context.Context, fn func(spi.Document) error) error {
	docs := slices.Clone(s.docs)
	sort.Slice(docs, func(i, j int) bool { return docs[i].ID < docs[j].ID })
	for i, d := range docs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.onDoc != nil {
			s.onDoc(i)
		}
		if err := fn(d); err != nil {
			return err
		}
	}
	return nil
}

// mustOpen opens a backend in a fresh temp dir (or cfg.Dir) and closes it
// at cleanup.
func mustOpen(tb testing.TB, cfg keyword.Config) *keyword.Backend {
	tb.Helper()
	if cfg.Dir == "" {
		cfg.Dir = tb.TempDir()
	}
	b, err := keyword.Open(cfg)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

func mustUpsert(tb testing.TB, b *keyword.Backend, docs ...spi.Document) {
	tb.Helper()
	if err := b.Upsert(context.Background(), docs); err != nil {
		tb.Fatalf("Upsert: %v", err)
	}
}

func mustRetrieve(tb testing.TB, b *keyword.Backend, req spi.KeywordRequest) []spi.Ref {
	tb.Helper()
	if req.K == 0 {
		req.K = 10
	}
	refs, err := b.Retrieve(context.Background(), req)
	if err != nil {
		tb.Fatalf("Retrieve(%q): %v", req.Text, err)
	}
	return refs
}

func ids(refs []spi.Ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

// wantIDs fails unless refs hold exactly want, in order.
func wantIDs(tb testing.TB, refs []spi.Ref, want ...string) {
	tb.Helper()
	if got := ids(refs); !slices.Equal(got, want) {
		tb.Fatalf("ids = %v, want %v (refs %v)", got, want, refs)
	}
}

// checkOrder fails unless refs are sorted by score desc, id asc, with the
// keyword source.
func checkOrder(tb testing.TB, refs []spi.Ref) {
	tb.Helper()
	for i, r := range refs {
		if r.Source != spi.SourceKeyword {
			tb.Fatalf("ref %d source = %q", i, r.Source)
		}
		if i == 0 {
			continue
		}
		p := refs[i-1]
		if p.Score < r.Score || (p.Score == r.Score && p.ID >= r.ID) {
			tb.Fatalf("refs out of order at %d: %v then %v", i, p, r)
		}
	}
}

// filler makes n unremarkable documents with a deterministic vocabulary,
// spread over tenants t0..t2 and metadata kind k0..k3, so hand-made cases
// are ranked inside a realistic index. None contains the words the
// hand-made cases use.
func filler(n int) []spi.Document {
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega")
	docs := make([]spi.Document, n)
	for i := range docs {
		var text []string
		for j := 0; j < 20+i%15; j++ {
			text = append(text, words[(i*7+j*j)%len(words)])
		}
		docs[i] = spi.Document{
			ID:       fmt.Sprintf("f%04d", i),
			Tenant:   fmt.Sprintf("t%d", i%3),
			Title:    words[i%len(words)] + " " + words[(i+5)%len(words)],
			Text:     strings.Join(text, " "),
			Metadata: spi.Strings(map[string]string{"kind": fmt.Sprintf("k%d", i%4)}),
		}
	}
	return docs
}

func isInvalid(err error) bool { return errors.Is(err, spi.ErrInvalidQuery) }
