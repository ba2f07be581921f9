package opensearch_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ragd/ragd/backends/keyword/opensearch"
	"github.com/ragd/ragd/spi"
)

// Two replicas apply the same ids' states concurrently, in random order
// and random batches, documents moving between tenants and being deleted
// on the way: the cluster ends up holding each id's newest state, in its
// tenant's index only, whatever the interleaving (external versions).
func TestConcurrentAppliersConverge(t *testing.T) {
	url := shared(t)
	ctx := context.Background()
	a := open(t, url, opensearch.Config{})
	b := open(t, url, opensearch.Config{IndexPrefix: a.Prefix()})
	const ids, versions = 12, 8
	var all []spi.Change
	final := map[string]spi.Change{}
	for i := range ids {
		id := fmt.Sprintf("d%02d", i)
		for v := 1; v <= versions; v++ {
			ver := uint64(v*ids + i)
			c := spi.Change{Seq: ver, ID: id, Version: ver}
			if (v+i)%5 == 0 {
				c.Op = spi.OpDelete
			} else {
				d := spi.Document{ID: id, Tenant: fmt.Sprintf("t%d", (v+i)%3), Title: "state", Text: fmt.Sprintf("word%d common", ver)}
				c.Op, c.Doc = spi.OpUpsert, &d
			}
			all = append(all, c)
			final[id] = c
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var wg sync.WaitGroup
	for n, st := range []*opensearch.Backend{a, b} {
		order := rng.Perm(len(all))
		rng := rand.New(rand.NewPCG(3, uint64(n)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for len(order) > 0 {
				n := min(len(order), 1+rng.IntN(6))
				batch := make([]spi.Change, n)
				for i, j := range order[:n] {
					batch[i] = all[j]
				}
				// A batch is in log order (the later of an id's changes
				// wins); the batches come in any order.
				slices.SortFunc(batch, func(x, y spi.Change) int { return cmp.Compare(x.Seq, y.Seq) })
				order = order[n:]
				if err := st.ApplyChanges(ctx, "log", batch, 0); err != nil {
					t.Errorf("ApplyChanges: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	check := func(st *opensearch.Backend) {
		t.Helper()
		for id, c := range final {
			docs, _, err := st.Hydrate(ctx, []string{id})
			if err != nil {
				t.Fatal(err)
			}
			if c.Doc == nil {
				if len(docs) != 0 {
					t.Fatalf("%s: deleted at %d, holds %+v", id, c.Version, docs[0])
				}
				continue
			}
			if len(docs) != 1 || docs[0].Text != c.Doc.Text || docs[0].Tenant != c.Doc.Tenant {
				t.Fatalf("%s: holds %+v, want %+v", id, docs, *c.Doc)
			}
			for _, tn := range []string{"t0", "t1", "t2"} {
				refs, err := st.Retrieve(ctx, spi.KeywordRequest{Text: fmt.Sprintf("word%d", c.Version), K: 5, Tenant: tn})
				if err != nil {
					t.Fatal(err)
				}
				if want := tn == c.Doc.Tenant; (len(refs) == 1) != want {
					t.Fatalf("%s in tenant %s: %v (its tenant is %s)", id, tn, refs, c.Doc.Tenant)
				}
			}
		}
		vs := map[string]uint64{}
		if err := spi.AllVersions(ctx, st, "log", 5, func(id string, v uint64) error { vs[id] = v; return nil }); err != nil {
			t.Fatal(err)
		}
		for id, c := range final {
			if got, ok := vs[id]; (c.Doc != nil) != ok || ok && got != c.Version {
				t.Fatalf("Versions: %s = %d (%v), want %d (live %v)", id, got, ok, c.Version, c.Doc != nil)
			}
		}
		if refs, _ := st.Retrieve(ctx, spi.KeywordRequest{Text: "common", K: 100}); len(refs) != len(vs) {
			t.Fatalf("every tenant: %d documents with the common word, %d live ids", len(refs), len(vs))
		}
	}
	check(a)
	check(b)
}

// failRecords fails (once armed) every bulk request that writes the id
// records: an apply that wrote the documents and stopped before its
// records and checkpoint, as a crash would leave it.
type failRecords struct{ armed atomic.Bool }

func (f *failRecords) RoundTrip(req *http.Request) (*http.Response, error) {
	if f.armed.Load() && strings.HasSuffix(req.URL.Path, "/_bulk") && req.Body != nil {
		body, _ := io.ReadAll(req.Body)
		req.Body.Close()
		if bytes.Contains(body, []byte(`-ids"`)) {
			return nil, errors.New("injected: connection lost")
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
	}
	return http.DefaultTransport.RoundTrip(req)
}

// An apply interrupted between the documents and their records leaves
// the checkpoint where it was; the next apply of the same changes
// completes it (the documents' versions are there already: conflicts,
// harmless), and a delete then finds where the document lives.
func TestApplyInterruptedBeforeRecords(t *testing.T) {
	url := shared(t)
	ctx := context.Background()
	f := &failRecords{}
	b := open(t, url, opensearch.Config{Transport: f})
	d := spi.Document{ID: "a", Tenant: "t1", Title: "turbine", Text: "blades"}
	up := []spi.Change{{Seq: 1, Op: spi.OpUpsert, ID: "a", Doc: &d, Version: 1}}
	f.armed.Store(true)
	if err := b.ApplyChanges(ctx, "log", up, 1); !errors.Is(err, spi.ErrUnavailable) {
		t.Fatalf("interrupted apply: %v, want ErrUnavailable", err)
	}
	if seq, _ := b.AppliedSeq(ctx, "log"); seq != 0 {
		t.Fatalf("checkpoint %d after an interrupted apply, want 0", seq)
	}
	f.armed.Store(false)
	if err := b.ApplyChanges(ctx, "log", up, 1); err != nil {
		t.Fatalf("apply again: %v", err)
	}
	if seq, _ := b.AppliedSeq(ctx, "log"); seq != 1 {
		t.Fatalf("checkpoint %d, want 1", seq)
	}
	if err := b.ApplyChanges(ctx, "log", []spi.Change{{Seq: 2, Op: spi.OpDelete, ID: "a", Version: 2}}, 2); err != nil {
		t.Fatal(err)
	}
	if docs, _, err := b.Hydrate(ctx, []string{"a"}); err != nil || len(docs) != 0 {
		t.Fatalf("after the delete: %v, %v", docs, err)
	}
}
